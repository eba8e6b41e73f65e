//! The kernel tables: the element function, the CPU kernels per type (element-wise, folds and
//! pairwise tiles) and the GPU kernels (WGSL per type and layout) of a valid op.

use crate::types::{dtype_variant, elem_ty, fold_call, pair_fns, word_ty};
use crate::valid::Model;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;
use tensorbits_core::wgsl::{KernelKind, Layout, WordClass, reduce_shader, shader};
use tensorbits_core::{DataType, ReduceOp};

/// The element function, lowered from `compute`, generic over the word type.
pub fn eval_fn(m: &Model) -> TokenStream {
    let n = m.inputs.len();
    let body = m.compute.to_rust();
    let bound = if m.compute.first_int_only_op().is_some() {
        quote!(::tensorbits::__private::IntWord)
    } else {
        quote!(::tensorbits::__private::Word)
    };
    let ret = if m.compute.is_count() {
        quote!(u32)
    } else {
        quote!(W)
    };
    // A pairwise op without a kernel in the runtime: its pair kernel at any word, one instance per
    // type for the kernel table and every typed method.
    let pair = if m.pairwise && pair_form(m).is_none() {
        let use_wide = m.compute.is_width_agnostic_count();
        let (elem, wide) = pair_fns(m.compute.is_count(), use_wide, &quote!(Self), &quote!(W));
        quote! {
            #[doc(hidden)]
            fn __tensorbits_pair<W: #bound>(
                task: &::tensorbits::__private::PairTask<'_>,
                out: &mut ::tensorbits::__private::PairOut<'_, '_>,
            ) {
                ::tensorbits::__private::pair::<W, #wide>(task, out, #elem, #use_wide)
            }
        }
    } else {
        TokenStream::new()
    };
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        fn __tensorbits_eval<W: #bound>(x: [W; #n]) -> #ret {
            #body
        }
        #pair
    }
}

/// One CPU kernel per (input word, output) pair, and the table by (input type, output type): types
/// that share a word (`f32` and `u32`) share a kernel. A reduction's kernels write its intermediate
/// results (a count as `u8` for a sum, else the element); a pairwise op has a pair kernel per type.
pub fn cpu_kernels(m: &Model, ident: &Ident) -> TokenStream {
    let n = m.inputs.len();
    let mut fns: Vec<(String, TokenStream)> = Vec::new();
    let mut entries = Vec::new();
    // A pairwise op's kernel per type: the runtime's own for the common sums (one function for
    // every type, compiled there), else the op's generic pair function at the type's word.
    let form = pair_form(m);
    let pair_entries = if m.pairwise {
        m.all_types()
            .into_iter()
            .map(|t| {
                let w = word_ty(t);
                let use_wide = m.compute.is_width_agnostic_count();
                let run = form
                    .clone()
                    .unwrap_or_else(|| quote!(#ident::__tensorbits_pair::<#w>));
                let tv = dtype_variant(t);
                quote! {
                    ::tensorbits::__private::PairKernel {
                        input: ::tensorbits::DataType::#tv,
                        run: #run,
                        wide: #use_wide,
                    }
                }
            })
            .collect::<Vec<_>>()
    } else {
        Vec::new()
    };
    let map_types = if m.pairwise {
        Vec::new()
    } else {
        m.all_types()
    };
    // A reduction's fused kernels, one per word, and the map kernels for the rest.
    let mut folds: Vec<(String, TokenStream)> = Vec::new();
    for t in map_types {
        let w = word_ty(t);
        let fold = match m.reduce {
            Some(r) => {
                let key = w.to_string();
                let idx = match folds.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        let f = format_ident!("__tensorbits_fold_{}", folds.len());
                        let body = fold_call(r, &quote!(#ident), &w, n);
                        folds.push((
                            key,
                            quote! {
                                fn #f(inputs: &[&[u8]], acc: &mut [u64], row: usize) {
                                    #body
                                }
                            },
                        ));
                        folds.len() - 1
                    }
                };
                let f = format_ident!("__tensorbits_fold_{}", idx);
                quote!(::core::option::Option::Some(#f))
            }
            None => quote!(::core::option::Option::None),
        };
        let outs = match (m.reduce, &m.output) {
            (Some(ReduceOp::Sum), _) => vec![DataType::U8],
            (Some(_), _) => vec![t],
            (None, Some(o)) => o.clone(),
            (None, None) => vec![t],
        };
        for o in outs {
            let (o_word, call) = if m.compute.is_count() {
                let oty = elem_ty(o);
                let call = quote! {
                    |x| <#oty as ::tensorbits::__private::CountOutput>::from_count(
                        #ident::__tensorbits_eval::<#w>(x),
                    )
                };
                (oty, call)
            } else {
                (w.clone(), quote!(#ident::__tensorbits_eval::<#w>))
            };
            let key = format!("{w} -> {o_word}");
            let idx = match fns.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    let f = format_ident!("__tensorbits_map_{}", fns.len());
                    fns.push((
                        key,
                        quote! {
                            fn #f(inputs: &[&[u8]], out: &mut [u8]) {
                                ::tensorbits::__private::map::<#w, #o_word, #n>(inputs, out, #call)
                            }
                        },
                    ));
                    fns.len() - 1
                }
            };
            let f = format_ident!("__tensorbits_map_{}", idx);
            let (tv, ov) = (dtype_variant(t), dtype_variant(o));
            entries.push(quote! {
                ::tensorbits::__private::CpuKernel {
                    input: ::tensorbits::DataType::#tv,
                    output: ::tensorbits::DataType::#ov,
                    map: #f,
                    fold: #fold,
                }
            });
        }
    }
    let fns = fns.iter().map(|(_, f)| f);
    let folds = folds.iter().map(|(_, f)| f);
    quote! {
        #(#fns)*
        #(#folds)*
        const __TENSORBITS_CPU_KERNELS: &[::tensorbits::__private::CpuKernel] = &[#(#entries),*];
        const __TENSORBITS_PAIR_KERNELS: &[::tensorbits::__private::PairKernel] = &[#(#pair_entries),*];
    }
}

/// The WGSL kernels: for every input type, output type and layout, the shader wrapping `tb_eval`
/// lowered from the same expression as the CPU kernel. Identical sources are emitted once.
pub fn gpu_kernels(m: &Model) -> TokenStream {
    let n = m.inputs.len();
    let signed = m.compute.first_shift().is_some();
    let count = m.compute.is_count();
    let mut sources: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    for t in m.all_types() {
        let class = WordClass::of(t, signed);
        // A ratio op's shaders count `a & b` (its results come from those counts).
        let outs = match m.ratio {
            Some(_) => vec![DataType::U32, DataType::U64],
            None => m.output.clone().unwrap_or_else(|| vec![t]),
        };
        for o in outs {
            let kind = KernelKind {
                class,
                out_bits: o.bits(),
                count,
            };
            // A sum of a count that is the same at every width also runs on rows' 32-bit words.
            let words = m.compute.is_width_agnostic_count();
            let layouts: Vec<Layout> = match (m.reduce, m.pairwise) {
                (None, _) => Layout::ALL.to_vec(),
                (Some(_), false) => vec![Layout::Reduce, Layout::ReduceRows, Layout::ReduceMerge],
                (Some(tensorbits_core::ReduceOp::Sum), true) if words => vec![
                    Layout::Pairwise,
                    Layout::ReduceMerge,
                    Layout::Knn,
                    Layout::KnnMerge,
                    Layout::PairWords,
                    Layout::KnnWords,
                ],
                (Some(tensorbits_core::ReduceOp::Sum), true) => vec![
                    Layout::Pairwise,
                    Layout::ReduceMerge,
                    Layout::Knn,
                    Layout::KnnMerge,
                ],
                (Some(_), true) => vec![Layout::Pairwise, Layout::ReduceMerge],
            };
            for layout in layouts {
                if layout == Layout::Words && !m.compute.is_width_agnostic() {
                    continue;
                }
                let eval_class = match layout {
                    Layout::Words if class == WordClass::Bool => WordClass::BoolWord,
                    Layout::Words => WordClass::Word,
                    Layout::PairWords | Layout::KnnWords => WordClass::U32,
                    _ => class,
                };
                let kind = match layout {
                    Layout::PairWords | Layout::KnnWords => KernelKind {
                        class: WordClass::U32,
                        ..kind
                    },
                    _ => kind,
                };
                let eval = m.compute.wgsl_eval(eval_class, n);
                let src = match m.reduce {
                    Some(r) => reduce_shader(layout, r, kind, n, &eval),
                    None => shader(layout, kind, n, &eval),
                };
                let idx = match sources.iter().position(|s| *s == src) {
                    Some(i) => i,
                    None => {
                        sources.push(src);
                        sources.len() - 1
                    }
                };
                let (tv, ov) = (dtype_variant(t), dtype_variant(o));
                let lv = format_ident!("{}", format!("{layout:?}"));
                let c = format_ident!("__TENSORBITS_WGSL_{}", idx);
                entries.push(quote! {
                    ::tensorbits::__private::GpuKernel {
                        input: ::tensorbits::DataType::#tv,
                        output: ::tensorbits::DataType::#ov,
                        layout: ::tensorbits::__private::Layout::#lv,
                        source: #c,
                    }
                });
            }
        }
    }
    let consts = sources.iter().enumerate().map(|(i, s)| {
        let c = format_ident!("__TENSORBITS_WGSL_{}", i);
        quote!(const #c: &str = #s;)
    });
    quote! {
        #(#consts)*
        const __TENSORBITS_GPU_KERNELS: &[::tensorbits::__private::GpuKernel] = &[#(#entries),*];
    }
}

/// The pair kernel compiled into the runtime for a pairwise sum of the bit counts of any function
/// of the two inputs' bits (written any way: `!(a ^ b)`, `!a ^ b`, `(b & a)`, `a & !b` ...), found
/// by the expression's truth table: XOR and AND have tiles of their own, every other table the
/// runtime's `pair_table` (from their tiles and the rows' counts). Other expressions
/// (shifts, literals) get the runtime's generic tiles, compiled in the user's crate.
pub fn pair_form(m: &Model) -> Option<TokenStream> {
    if !m.pairwise || m.reduce != Some(ReduceOp::Sum) {
        return None;
    }
    let table = m.compute.truth_table()?;
    let f = match table {
        0b0110 => "pair_xor",
        0b1000 => "pair_and",
        _ => {
            return Some(quote! {
                |task: &::tensorbits::__private::PairTask<'_>,
                 out: &mut ::tensorbits::__private::PairOut<'_, '_>| {
                    ::tensorbits::__private::pair_table(task, out, #table)
                }
            });
        }
    };
    let f = format_ident!("{f}");
    Some(quote!(::tensorbits::__private::#f))
}
