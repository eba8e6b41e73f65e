//! Expansion: the pipeline (parse -> validate -> expand) and the generated items. The typed methods'
//! signatures are built in one place ([`methods`]) for a valid spec and for the fallback alike, so a
//! spec with mistakes still gives its users the methods they call.

use crate::ctxt::Ctxt;
use crate::valid::Model;
use crate::{ast, docs, fallback, valid};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Fields, Ident, ItemStruct};
use tensorbits_core::wgsl::{KernelKind, Layout, WordClass, reduce_shader, shader};
use tensorbits_core::{BroadcastMode, DataType, FeatureLevel, ReduceOp};

/// Names of the generated methods' parameters beside the inputs; an input may not take one.
const OPTIONS: &str = "options";
const OUT: &str = "out";
const TARGET: &str = "target";
const GPU: &str = "gpu";
const K: &str = "k";
pub const RESERVED: &[&str] = &[OPTIONS, OUT, TARGET, GPU];
/// Beside those, the parameters of a pairwise op's `knn` methods.
pub const RESERVED_PAIRWISE: &[&str] = &[K];

pub fn bitwise_op(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let s = match syn::parse2::<ItemStruct>(item.clone()) {
        Ok(s) => s,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "#[bitwise_op] goes on a unit struct, such as `pub struct BitXor;`",
            );
            let errors = cx.finish();
            return quote!(#item #errors);
        }
    };
    if !matches!(s.fields, Fields::Unit) {
        cx.error(
            &s.fields,
            "#[bitwise_op] goes on a unit struct, such as `pub struct BitXor;`; remove the fields",
        );
    }
    let generic = !s.generics.params.is_empty();
    if generic {
        cx.error(&s.generics, "#[bitwise_op] structs cannot be generic");
    }
    let spec = ast::parse(args, &mut cx);
    let model = valid::check(&spec, &s.ident, &mut cx);
    match (cx.finish(), model) {
        (None, Some(m)) => expand(&s, &m),
        // The item and stubs of everything a valid spec defines, so that one mistake does not
        // cascade into an error at every use of the op.
        (errors, _) if !generic => {
            let stubs = fallback::expand(&s, &spec);
            quote!(#s #stubs #errors)
        }
        (errors, _) => quote!(#s #errors),
    }
}

pub fn dtype_variant(t: DataType) -> Ident {
    format_ident!("{}", format!("{t:?}"))
}

/// The Rust element type of a data type.
pub fn elem_ty(t: DataType) -> TokenStream {
    match t {
        DataType::F16 => quote!(::tensorbits::f16),
        other => {
            let id = format_ident!("{}", other.name());
            quote!(#id)
        }
    }
}

/// The word a kernel computes on: floats as the unsigned integer of their width, bool as `Bool8`.
fn word_ty(t: DataType) -> TokenStream {
    match t {
        DataType::F16 => quote!(u16),
        DataType::F32 => quote!(u32),
        DataType::F64 => quote!(u64),
        DataType::Bool => quote!(::tensorbits::__private::Bool8),
        other => elem_ty(other),
    }
}

fn type_list(ts: &[DataType]) -> String {
    let mut ts = ts.to_vec();
    ts.sort();
    ts.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
}

/// What the typed methods' signatures depend on.
pub struct Signature<'a> {
    pub ident: &'a Ident,
    pub inputs: Vec<Ident>,
    /// For an op whose output type differs from the inputs' (a bit count): its default output type.
    pub count_default: Option<DataType>,
    /// Inputs the output may alias.
    pub in_place: Vec<usize>,
    /// How the op reduces, if it does.
    pub reduce: Option<ReduceOp>,
    /// A pairwise op, which also has `knn` methods when it sums.
    pub pairwise: bool,
    /// For a pairwise sum: its element function may run on whole 64-bit words.
    pub wide: bool,
}

impl Signature<'_> {
    fn knn(&self) -> bool {
        self.pairwise && self.reduce == Some(ReduceOp::Sum)
    }
}

/// The method a body is generated for.
#[derive(Clone, Copy)]
pub enum Method {
    Run,
    RunWith,
    RunInto,
    RunOn,
    RunGpu,
    InPlace(usize),
    Knn,
    KnnWith,
    KnnOn,
}

fn expand(s: &ItemStruct, m: &Model) -> TokenStream {
    let ident = &s.ident;
    let summary = summary(s);
    let doc = docs::render(m, &ident.to_string());
    let sig = Signature {
        ident,
        inputs: m.inputs.clone(),
        count_default: m.output.as_ref().and_then(|o| o.first().copied()),
        in_place: m.in_place.clone(),
        reduce: m.reduce,
        pairwise: m.pairwise,
        wide: m.compute.is_count() && m.compute.is_width_agnostic_count(),
    };
    let parts = |cpu: TokenStream, pair: TokenStream| parts(m, ident, &summary, cpu, pair);
    let info = parts(
        quote!(__TENSORBITS_CPU_KERNELS),
        quote!(__TENSORBITS_PAIR_KERNELS),
    );
    let meta = parts(quote!(&[]), quote!(&[]));
    let cpu = cpu_kernels(m, ident);
    let gpu = gpu_kernels(m);
    let traits = supports_traits(m, ident, &s.vis);
    let eval = eval_fn(m);
    // A pairwise sum whose count is the same at every width also runs on whole words.
    let wide = if m.pairwise && sig.wide {
        let inner = m.compute.to_lanes();
        quote! {
            #[automatically_derived]
            impl ::tensorbits::__private::WideExpr for #ident {
                #[inline(always)]
                fn wide<L: ::tensorbits::__private::Lanes>(x: [L; 2]) -> L {
                    #inner
                }
            }
        }
    } else {
        TokenStream::new()
    };
    let methods = methods(&sig, &|method| method_body(&sig, method));
    let mut item = s.clone();
    item.attrs.push(syn::parse_quote!(#[doc = #doc]));
    quote! {
        #item

        #traits

        // The kernels and metadata are items of this block, out of the user's namespace.
        const _: () = {
            #cpu
            #wide
            #gpu

            #[automatically_derived]
            impl ::tensorbits::Op for #ident {
                const INFO: &'static ::tensorbits::OpInfo = &::tensorbits::OpInfo::from_parts(#info);
            }

            // The typed methods run the element function at the call's types, and never the
            // kernel table: a crate pays for the kernels of the types it calls, not of all types.
            #[automatically_derived]
            impl ::tensorbits::__private::TypedOp for #ident {
                const META: &'static ::tensorbits::OpInfo = &::tensorbits::OpInfo::from_parts(#meta);
            }
        };

        #[automatically_derived]
        impl #ident {
            #eval
        }

        #methods
    }
}

/// The doc comment's first paragraph, on one line.
fn summary(s: &ItemStruct) -> String {
    let lines: Vec<String> = s
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(l),
                    ..
                }) => Some(l.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines
        .iter()
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

fn reduce_variant(r: ReduceOp) -> TokenStream {
    let v = format_ident!("{}", format!("{r:?}"));
    quote!(::tensorbits::ReduceOp::#v)
}

fn parts(
    m: &Model,
    ident: &Ident,
    summary: &str,
    cpu: TokenStream,
    pair: TokenStream,
) -> TokenStream {
    let name = &m.name;
    let type_name = ident.to_string();
    let inputs: Vec<String> = m.inputs.iter().map(|i| i.to_string()).collect();
    let compute = &m.compute_text;
    let (lo, hi) = (m.min_rank, m.max_rank);
    let broadcast = m.broadcast.iter().map(|b| {
        let v = match b {
            BroadcastMode::None => quote!(None),
            BroadcastMode::Numpy => quote!(Numpy),
            BroadcastMode::Pdpd => quote!(Pdpd),
        };
        quote!(::tensorbits::BroadcastMode::#v)
    });
    let in_place = &m.in_place;
    let support = m.support.iter().map(|(l, ts)| {
        let l = format_ident!("{}", l.name());
        let ts = ts.iter().map(|t| dtype_variant(*t));
        quote!((::tensorbits::FeatureLevel::#l, &[#(::tensorbits::DataType::#ts),*]))
    });
    let output = match &m.output {
        Some(o) => {
            let o = o.iter().map(|t| dtype_variant(*t));
            quote!(::core::option::Option::Some(&[#(::tensorbits::DataType::#o),*]))
        }
        None => quote!(::core::option::Option::None),
    };
    let reduce = match m.reduce {
        Some(r) => {
            let r = reduce_variant(r);
            quote!(::core::option::Option::Some(#r))
        }
        None => quote!(::core::option::Option::None),
    };
    let axes = match &m.axes {
        Some(a) => quote!(::core::option::Option::Some(&[#(#a),*])),
        None => quote!(::core::option::Option::None),
    };
    let pairwise = m.pairwise;
    let affine = match m.affine {
        Some(a) => {
            let (c, b, k) = (a.constant, a.bits, a.scale);
            quote!(::core::option::Option::Some(::tensorbits::Affine { constant: #c, bits: #b, scale: #k }))
        }
        None => quote!(::core::option::Option::None),
    };
    let nearest = format_ident!("{}", format!("{:?}", m.nearest));
    // A sum whose count is bit-local can ignore padding bits: zeroed, each adds a known amount.
    let zeros = [8, 16, 32, 64].map(|w| m.compute.zero_bits(w));
    let zeros = match (m.reduce, zeros) {
        (Some(ReduceOp::Sum), [Some(a), Some(b), Some(c), Some(d)]) => {
            quote!(::core::option::Option::Some([#a, #b, #c, #d]))
        }
        _ => quote!(::core::option::Option::None),
    };
    quote! {
        ::tensorbits::__private::OpParts {
            name: #name,
            type_name: #type_name,
            summary: #summary,
            inputs: &[#(#inputs),*],
            compute: #compute,
            min_rank: #lo,
            max_rank: #hi,
            broadcast: &[#(#broadcast),*],
            in_place: &[#(#in_place),*],
            support: &[#(#support),*],
            output: #output,
            reduce: #reduce,
            axes: #axes,
            pairwise: #pairwise,
            affine: #affine,
            nearest: ::tensorbits::Nearest::#nearest,
            zeros: #zeros,
            cpu: #cpu,
            pair: #pair,
            gpu: __TENSORBITS_GPU_KERNELS,
        }
    }
}

/// The element function, lowered from `compute`, generic over the word type.
fn eval_fn(m: &Model) -> TokenStream {
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
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        fn __tensorbits_eval<W: #bound>(x: [W; #n]) -> #ret {
            #body
        }
    }
}

/// One CPU kernel per (input word, output) pair, and the table by (input type, output type): types
/// that share a word (`f32` and `u32`) share a kernel. A reduction's kernels write its intermediate
/// results (a count as `u8` for a sum, else the element); a pairwise op has a pair kernel per type.
fn cpu_kernels(m: &Model, ident: &Ident) -> TokenStream {
    let n = m.inputs.len();
    let mut fns: Vec<(String, TokenStream)> = Vec::new();
    let mut entries = Vec::new();
    let pairs = if m.pairwise {
        m.all_types()
            .into_iter()
            .map(|t| {
                let w = word_ty(t);
                let use_wide = m.compute.is_width_agnostic_count();
                let (elem, wide) = pair_fns(m.compute.is_count(), use_wide, &quote!(#ident), &w);
                let f = format_ident!("__tensorbits_pair_{}", format!("{t:?}").to_lowercase());
                let tv = dtype_variant(t);
                (
                    quote! {
                        fn #f(task: &::tensorbits::__private::PairTask<'_>, out: &mut ::tensorbits::__private::PairOut<'_, '_>) {
                            ::tensorbits::__private::pair::<#w, #wide>(task, out, #elem, #use_wide)
                        }
                    },
                    quote! {
                        ::tensorbits::__private::PairKernel {
                            input: ::tensorbits::DataType::#tv,
                            run: #f,
                            wide: #use_wide,
                        }
                    },
                )
            })
            .collect::<Vec<_>>()
    } else {
        Vec::new()
    };
    let (pair_fns_tokens, pair_entries): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
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
        #(#pair_fns_tokens)*
        const __TENSORBITS_CPU_KERNELS: &[::tensorbits::__private::CpuKernel] = &[#(#entries),*];
        const __TENSORBITS_PAIR_KERNELS: &[::tensorbits::__private::PairKernel] = &[#(#pair_entries),*];
    }
}

/// A call of a reduction's fused kernel at word `w` over the element function at `path`, with the
/// parameters `inputs`, `acc` and `row` of the runtime's `FoldKernel`.
fn fold_call(r: ReduceOp, path: &TokenStream, w: &TokenStream, n: usize) -> TokenStream {
    let eval = quote!(#path::__tensorbits_eval::<#w>);
    match r {
        ReduceOp::Sum => quote! {
            ::tensorbits::__private::fold_count::<#w, #n>(inputs, acc, row, #eval)
        },
        _ => {
            let op = reduce_variant(r);
            quote! {
                ::tensorbits::__private::fold_bits::<#w, #n, { ::tensorbits::__private::fold_code(#op) }>(
                    inputs, acc, row, #eval,
                )
            }
        }
    }
}

/// A pairwise op's element function (at `path`) at word `w` as the value a pair kernel folds (a
/// count, or the element's bits), and the type whose `WideExpr` gives its wide path: the op's own
/// when `wide`, else `NoWide`.
fn pair_fns(
    count: bool,
    wide: bool,
    path: &TokenStream,
    w: &TokenStream,
) -> (TokenStream, TokenStream) {
    let elem = if count {
        quote!(|x| u64::from(#path::__tensorbits_eval::<#w>(x)))
    } else {
        quote!(|x| ::tensorbits::__private::Word::bits(#path::__tensorbits_eval::<#w>(x)))
    };
    let wide = if wide {
        path.clone()
    } else {
        quote!(::tensorbits::__private::NoWide)
    };
    (elem, wide)
}

/// The per-op trait that makes unsupported data types compile errors, with a message that names the op,
/// the type and the level and lists what is supported; and, for bit counts, the output-type trait.
fn supports_traits(m: &Model, ident: &Ident, vis: &syn::Visibility) -> TokenStream {
    let tr = format_ident!("{}Supports", ident);
    let name = ident.to_string();
    let message =
        format!("`{name}` does not support data type `{{Self}}` at feature level `{{L}}`");
    let label = format!("`{{Self}}` is not supported by `{name}` at `{{L}}`");
    let notes = m.support.iter().map(|(l, ts)| {
        let at = if *l == FeatureLevel::EXT {
            "EXT".to_owned()
        } else {
            format!("{} and above", l.name())
        };
        format!("`{name}` supports at {at}: {}", type_list(ts))
    });
    let doc = format!(
        "The data types [`{name}`] supports at feature level `L`, implemented exactly for the entries of its \
         Tensor support table. The typed API takes it as a bound, so an unsupported type is a compile error."
    );
    let impls = FeatureLevel::ALL.into_iter().flat_map(|l| {
        let li = format_ident!("{}", l.name());
        let tr = tr.clone();
        m.types_at(l).into_iter().map(move |t| {
            let e = elem_ty(t);
            quote!(#[automatically_derived] impl #tr<::tensorbits::levels::#li> for #e {})
        })
    });
    let output = m.output.as_ref().map(|outs| {
        let otr = format_ident!("{}Output", ident);
        let list = outs.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ");
        let message = format!("`{{Self}}` is not an output type of `{name}`");
        let label = format!("`{name}` outputs {list}");
        let note = format!("`{name}` writes its count as one of: {list}");
        let doc = format!("The output data types of [`{name}`]: {list}.");
        let impls = outs.iter().map(|t| {
            let e = elem_ty(*t);
            quote!(#[automatically_derived] impl #otr for #e {})
        });
        quote! {
            #[doc = #doc]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            #vis trait #otr: ::tensorbits::Element<Word: ::tensorbits::__private::CountOutput> {}
            #(#impls)*
        }
    });
    // Shifts and counts compute on integer words; the bound lets the typed methods call the element
    // function at `T`'s word (every type such an op supports is an integer).
    let element = if m.compute.first_int_only_op().is_some() {
        quote!(::tensorbits::Element<Word: ::tensorbits::__private::IntWord>)
    } else {
        quote!(::tensorbits::Element)
    };
    // The same facts as bounds generic code can name for any op.
    let output_type = match m.output {
        Some(_) => {
            let otr = format_ident!("{}Output", ident);
            quote!(impl<T: ::tensorbits::Element, O: #otr> ::tensorbits::OutputType<T, O> for #ident {})
        }
        None => quote!(impl<T: ::tensorbits::Element> ::tensorbits::OutputType<T, T> for #ident {}),
    };
    quote! {
        #[doc = #doc]
        #[diagnostic::on_unimplemented(message = #message, label = #label, #(note = #notes),*)]
        #vis trait #tr<L: ::tensorbits::Level>: #element {}
        #(#impls)*
        #output
        #[automatically_derived]
        impl<T: #tr<L>, L: ::tensorbits::Level> ::tensorbits::SupportsType<T, L> for #ident {}
        #[automatically_derived]
        #output_type
    }
}

/// The output type of a method that returns a new tensor: the inputs' type, or for a bit count the
/// type the options choose (their default: the op's first output type).
fn new_output(sig: &Signature<'_>, method: Method) -> TokenStream {
    match (sig.count_default, method) {
        (None, _) => quote!(T),
        (Some(d), Method::Run) => elem_ty(d),
        (Some(d), _) => {
            let d = elem_ty(d);
            quote!(<C as ::tensorbits::__private::OutputChoice<#d>>::Out)
        }
    }
}

/// The body of a generated method of a valid op.
fn method_body(sig: &Signature<'_>, method: Method) -> TokenStream {
    if sig.reduce.is_some() {
        return reduce_body(sig, method);
    }
    let n = sig.inputs.len();
    let inputs = &sig.inputs;
    let args: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(::core::convert::Into::into(#i)))
        .collect();
    let meta = quote!(<Self as ::tensorbits::__private::TypedOp>::META);
    let (options, out, target, gpu) = (
        format_ident!("{OPTIONS}"),
        format_ident!("{OUT}"),
        format_ident!("{TARGET}"),
        format_ident!("{GPU}"),
    );
    let o = match method {
        Method::RunInto if sig.count_default.is_some() => quote!(O),
        _ => new_output(sig, method),
    };
    // The element function at `T`'s word, which the CPU paths run.
    let word = quote!(<T as ::tensorbits::Element>::Word);
    let eval = match sig.count_default {
        Some(_) => quote! {
            |x| <<#o as ::tensorbits::Element>::Word as ::tensorbits::__private::CountOutput>::from_count(
                Self::__tensorbits_eval::<#word>(x),
            )
        },
        None => quote!(Self::__tensorbits_eval::<#word>),
    };
    let call = match method {
        Method::Run => quote!(&::tensorbits::Call::default()),
        _ => quote!(&#options.call()),
    };
    match method {
        Method::Run | Method::RunWith => quote! {
            ::tensorbits::__private::run_new::<T, #o, #n>(#meta, #call, [#(#args),*], #eval)
        },
        Method::RunInto => quote! {
            ::tensorbits::__private::run_into::<T, #o, #n>(
                #meta, #call, [#(#args),*], ::core::convert::Into::into(#out), #eval,
            )
        },
        Method::RunOn => quote! {
            ::tensorbits::__private::run_on::<T, #o, #n>(#target, #meta, #call, [#(#args),*], #eval)
        },
        Method::RunGpu => quote! {
            #gpu.run_new::<T, #o, #n>(#meta, #call, [#(#inputs),*])
        },
        Method::InPlace(k) => {
            let target = &inputs[k];
            let others = inputs
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, i)| quote!(::core::convert::Into::into(#i)));
            quote! {
                ::tensorbits::__private::run_in_place::<T, #n>(
                    #meta, #call, #k, ::core::convert::Into::into(#target), &[#(#others),*], #eval,
                )
            }
        }
        Method::Knn | Method::KnnWith | Method::KnnOn => quote!(::core::unreachable!()),
    }
}

/// The body of a method of a reduction or pairwise op: its kernels made from the element function
/// at `T`'s word, and the runtime's entry for reductions.
fn reduce_body(sig: &Signature<'_>, method: Method) -> TokenStream {
    let n = sig.inputs.len();
    let inputs = &sig.inputs;
    let args: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(::core::convert::Into::into(#i)))
        .collect();
    let meta = quote!(<Self as ::tensorbits::__private::TypedOp>::META);
    let (options, out, target, gpu, k) = (
        format_ident!("{OPTIONS}"),
        format_ident!("{OUT}"),
        format_ident!("{TARGET}"),
        format_ident!("{GPU}"),
        format_ident!("{K}"),
    );
    let o = match method {
        Method::RunInto if sig.count_default.is_some() => quote!(O),
        Method::Knn => new_output(sig, Method::Run),
        Method::KnnWith | Method::KnnOn => new_output(sig, Method::RunWith),
        _ => new_output(sig, method),
    };
    let call = match method {
        Method::Run | Method::Knn => quote!(&::tensorbits::Call::default()),
        _ => quote!(&#options.call()),
    };
    let word = quote!(<T as ::tensorbits::Element>::Word);
    let count = sig.reduce == Some(ReduceOp::Sum);
    // Pairwise ops run their pair kernel and reductions their fused kernel, never a map kernel.
    let map = if sig.pairwise || sig.reduce.is_some() {
        quote!(|_: &[&[u8]], _: &mut [u8]| {})
    } else if count {
        quote! {
            |ins: &[&[u8]], o: &mut [u8]| ::tensorbits::__private::map::<#word, u8, #n>(ins, o, |x| {
                <u8 as ::tensorbits::__private::CountOutput>::from_count(Self::__tensorbits_eval::<#word>(x))
            })
        }
    } else {
        quote! {
            |ins: &[&[u8]], o: &mut [u8]| {
                ::tensorbits::__private::map::<#word, #word, #n>(ins, o, Self::__tensorbits_eval::<#word>)
            }
        }
    };
    let pair = if sig.pairwise {
        let (elem, wide) = pair_fns(count, sig.wide, &quote!(Self), &word);
        let use_wide = sig.wide;
        quote! {
            ::core::option::Option::Some((
                &|t: &::tensorbits::__private::PairTask<'_>, o: &mut ::tensorbits::__private::PairOut<'_, '_>| {
                    ::tensorbits::__private::pair::<#word, #wide>(t, o, #elem, #use_wide)
                },
                #use_wide,
            ))
        }
    } else {
        quote!(::core::option::Option::None)
    };
    let fold = match sig.reduce {
        Some(r) if !sig.pairwise => {
            let body = fold_call(r, &quote!(Self), &word, n);
            quote! {
                ::core::option::Option::Some(&|inputs: &[&[u8]], acc: &mut [u64], row: usize| {
                    #body
                })
            }
        }
        _ => quote!(::core::option::Option::None),
    };
    let kernels = quote! {
        let kernels = ::tensorbits::__private::Kernels { map: &#map, fold: #fold, pair: #pair };
    };
    let (a, b) = (&inputs[0], inputs.get(1).unwrap_or(&inputs[0]));
    match method {
        Method::Run | Method::RunWith => quote! {
            #kernels
            ::tensorbits::__private::reduce_new::<T, #o, #n>(#meta, #call, [#(#args),*], &kernels)
        },
        Method::RunInto => quote! {
            #kernels
            ::tensorbits::__private::reduce_into::<T, #o, #n>(
                #meta, #call, [#(#args),*], ::core::convert::Into::into(#out), &kernels,
            )
        },
        Method::RunOn => quote! {
            #kernels
            ::tensorbits::__private::reduce_on::<T, #o, #n>(#target, #meta, #call, [#(#args),*], &kernels)
        },
        Method::RunGpu => quote! {
            #gpu.run_new::<T, #o, #n>(#meta, #call, [#(#inputs),*])
        },
        Method::Knn | Method::KnnWith => quote! {
            #kernels
            ::tensorbits::__private::knn_new::<T, #o>(
                #meta, #call, ::core::convert::Into::into(#a), ::core::convert::Into::into(#b), #k, &kernels,
            )
        },
        Method::KnnOn => quote! {
            #kernels
            ::tensorbits::__private::knn_on::<T, #o>(
                #target, #meta, #call, ::core::convert::Into::into(#a), ::core::convert::Into::into(#b), #k, &kernels,
            )
        },
        Method::InPlace(_) => quote!(::core::unreachable!()),
    }
}

/// The typed API: `run`, `run_with`, `run_into` and one `run_in_place_<input>` per `in_place` input
/// on the CPU, and `run_on` and `run_gpu` when the runtime has its GPU executor. `body` gives each
/// method's body: the real one, or the fallback's.
pub fn methods(sig: &Signature<'_>, body: &dyn Fn(Method) -> TokenStream) -> TokenStream {
    let ident = sig.ident;
    let tr = format_ident!("{}Supports", ident);
    let inputs = &sig.inputs;
    let (options, out, target, gpu) = (
        format_ident!("{OPTIONS}"),
        format_ident!("{OUT}"),
        format_ident!("{TARGET}"),
        format_ident!("{GPU}"),
    );
    let view = quote!(::core::convert::Into<::tensorbits::TensorView<'x, T>>);
    let params: Vec<TokenStream> = inputs.iter().map(|i| quote!(#i: impl #view)).collect();
    let result = quote!(::core::result::Result);
    let err = quote!(::tensorbits::Error);
    // Ops with a count choose the output type through the options (`C`) or the output tensor (`O`).
    let (choice, choice_bound, into_generic, into_bound, out_note) = match sig.count_default {
        Some(d) => {
            let otr = format_ident!("{}Output", ident);
            let de = elem_ty(d);
            (
                quote!(, C),
                quote!(C: ::tensorbits::__private::OutputChoice<#de>, <C as ::tensorbits::__private::OutputChoice<#de>>::Out: #otr,),
                quote!(, O),
                quote!(O: #otr,),
                format!(
                    " The output type is `{}` unless the options choose another with \
                     [`Options::output`](::tensorbits::Options::output).",
                    d.name()
                ),
            )
        }
        None => (quote!(), quote!(), quote!(), quote!(), String::new()),
    };
    let options_ty = quote!(::tensorbits::Options<L #choice>);
    let into_out = if sig.count_default.is_some() {
        quote!(O)
    } else {
        quote!(T)
    };
    let (run_o, with_o) = (
        new_output(sig, Method::Run),
        new_output(sig, Method::RunWith),
    );
    let run_doc = format!(
        "Runs `{ident}` on the CPU at feature level `EXT` with the op's default broadcast mode, into a new \
         tensor.{}",
        sig.count_default
            .map(|d| format!(" The output type is `{}`, the op's default.", d.name()))
            .unwrap_or_default()
    );
    let with_doc = format!(
        "Runs `{ident}` on the CPU at the level and broadcast mode of `options`, into a new tensor. A data type \
         the op lacks at that level does not compile.{out_note}"
    );
    let into_doc = format!(
        "Runs `{ident}` on the CPU into `out`, an existing (possibly strided) tensor of the broadcast shape{}.",
        if sig.count_default.is_some() {
            " and one of the op's output types"
        } else {
            ""
        }
    );
    let gpu_params: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(#i: &::tensorbits::GpuTensor<T>))
        .collect();
    let gpu_doc = format!(
        "Runs `{ident}` on `gpu` at the level and broadcast mode of `options`, into a new device tensor. \
         Upload with [`GpuExecutor::upload`](::tensorbits::GpuExecutor::upload), read back with \
         [`GpuExecutor::download`](::tensorbits::GpuExecutor::download).{out_note}"
    );
    let on_doc = format!(
        "Runs `{ident}` on host tensors on `target` (the CPU, or a GPU with upload and read-back) at the level \
         and broadcast mode of `options`, into a new tensor.{out_note}"
    );
    let in_place = sig.in_place.iter().map(|&k| {
        let target_input = &inputs[k];
        let fname = format_ident!("run_in_place_{}", target_input);
        let params = inputs.iter().enumerate().map(|(j, i)| {
            if j == k {
                quote!(#i: impl ::core::convert::Into<::tensorbits::TensorViewMut<'y, T>>)
            } else {
                quote!(#i: impl #view)
            }
        });
        let doc = format!(
            "Runs `{ident}` in place: `{target_input}` is read and overwritten with the result. Its shape must \
             be the broadcast shape."
        );
        let b = body(Method::InPlace(k));
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn #fname<'x, 'y, L: ::tensorbits::Level, T: #tr<L>>(
                #options: &::tensorbits::Options<L>,
                #(#params),*
            ) -> #result<(), #err> {
                #b
            }
        }
    });
    let (b_run, b_with, b_into, b_on, b_gpu) = (
        body(Method::Run),
        body(Method::RunWith),
        body(Method::RunInto),
        body(Method::RunOn),
        body(Method::RunGpu),
    );
    // knn, for pairwise sums: the `k` nearest rows of `b` for each row of `a`.
    let (knn_cpu, knn_gpu) = if sig.knn() && inputs.len() == 2 {
        let k = format_ident!("{K}");
        let result_run =
            quote!(#result<(::tensorbits::Tensor<#run_o>, ::tensorbits::Tensor<i64>), #err>);
        let result_with =
            quote!(#result<(::tensorbits::Tensor<#with_o>, ::tensorbits::Tensor<i64>), #err>);
        let doc = format!(
            "For each row of `{a}` (`[..., M, K]`), the `{k}` nearest rows of `{b}` (`[..., N, K]`) under `{ident}`, \
             on the CPU at feature level `EXT`: their distances and row indices, both `[..., M, {k}]`, ascending by \
             distance, ties broken by the lower index. The `M x N` distances are never held at once. `{k}` greater \
             than N is an error.",
            a = inputs[0],
            b = inputs[1],
        );
        let with_doc = format!(
            "[`knn`](Self::knn) at the level of `options`, with the distances' type they choose.{out_note}"
        );
        let on_doc = format!(
            "[`knn`](Self::knn) on `target` (the CPU, or a GPU with upload and read-back) at the level of `options`.{out_note}"
        );
        let (b_knn, b_knn_with, b_knn_on) = (
            body(Method::Knn),
            body(Method::KnnWith),
            body(Method::KnnOn),
        );
        (
            quote! {
                #[doc = #doc]
                pub fn knn<'x, T>(#(#params,)* #k: usize) -> #result_run
                where
                    T: #tr<::tensorbits::levels::EXT>,
                {
                    #b_knn
                }

                #[doc = #with_doc]
                pub fn knn_with<'x, L: ::tensorbits::Level, T #choice>(
                    #options: &#options_ty,
                    #(#params,)*
                    #k: usize,
                ) -> #result_with
                where
                    T: #tr<L>,
                    #choice_bound
                {
                    #b_knn_with
                }
            },
            quote! {
                #[doc = #on_doc]
                pub fn knn_on<'x, L: ::tensorbits::Level, T #choice>(
                    #target: &::tensorbits::Target<'_>,
                    #options: &#options_ty,
                    #(#params,)*
                    #k: usize,
                ) -> #result_with
                where
                    T: #tr<L>,
                    #choice_bound
                {
                    #b_knn_on
                }
            },
        )
    } else {
        (quote!(), quote!())
    };
    quote! {
        #[automatically_derived]
        impl #ident {
            #[doc = #run_doc]
            #[inline]
            pub fn run<'x, T>(#(#params),*) -> #result<::tensorbits::Tensor<#run_o>, #err>
            where
                T: #tr<::tensorbits::levels::EXT>,
            {
                #b_run
            }

            #[doc = #with_doc]
            #[inline]
            pub fn run_with<'x, L: ::tensorbits::Level, T #choice>(
                #options: &#options_ty,
                #(#params),*
            ) -> #result<::tensorbits::Tensor<#with_o>, #err>
            where
                T: #tr<L>,
                #choice_bound
            {
                #b_with
            }

            #[doc = #into_doc]
            #[inline]
            pub fn run_into<'x, 'y, L: ::tensorbits::Level, T #into_generic>(
                #options: &::tensorbits::Options<L>,
                #(#params,)*
                #out: impl ::core::convert::Into<::tensorbits::TensorViewMut<'y, #into_out>>,
            ) -> #result<(), #err>
            where
                T: #tr<L>,
                #into_bound
            {
                #b_into
            }

            #(#in_place)*

            #knn_cpu
        }

        ::tensorbits::__private::if_gpu! {
            #[automatically_derived]
            impl #ident {
                #[doc = #on_doc]
                #[inline]
                pub fn run_on<'x, L: ::tensorbits::Level, T #choice>(
                    #target: &::tensorbits::Target<'_>,
                    #options: &#options_ty,
                    #(#params),*
                ) -> #result<::tensorbits::Tensor<#with_o>, #err>
                where
                    T: #tr<L>,
                    #choice_bound
                {
                    #b_on
                }

                #[doc = #gpu_doc]
                pub fn run_gpu<L: ::tensorbits::Level, T #choice>(
                    #gpu: &::tensorbits::GpuExecutor,
                    #options: &#options_ty,
                    #(#gpu_params),*
                ) -> #result<::tensorbits::GpuTensor<#with_o>, #err>
                where
                    T: #tr<L>,
                    #choice_bound
                {
                    #b_gpu
                }

                #knn_gpu
            }
        }
    }
}

/// The WGSL kernels: for every input type, output type and layout, the shader wrapping `tb_eval`
/// lowered from the same expression as the CPU kernel. Identical sources are emitted once.
fn gpu_kernels(m: &Model) -> TokenStream {
    let n = m.inputs.len();
    let signed = m.compute.first_shift().is_some();
    let count = m.compute.is_count();
    let mut sources: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    for t in m.all_types() {
        let class = WordClass::of(t, signed);
        let outs = m.output.clone().unwrap_or_else(|| vec![t]);
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
