//! Expansion: the pipeline (parse -> validate -> expand) and the generated items.

use crate::ctxt::Ctxt;
use crate::valid::Model;
use crate::{ast, docs, valid};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Fields, Ident, ItemStruct};
use tensorbits_spec::wgsl::{KernelKind, Layout, WordClass, shader};
use tensorbits_spec::{BroadcastMode, DataType, FeatureLevel};

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
    if !s.generics.params.is_empty() {
        cx.error(&s.generics, "#[bitwise_op] structs cannot be generic");
    }
    let spec = ast::parse(args, &mut cx);
    let model = valid::check(spec, &s.ident, &mut cx);
    match (cx.finish(), model) {
        (None, Some(m)) => expand(&s, &m),
        // Still emit the struct, so one mistake does not cascade into errors wherever it is used.
        (errors, _) => quote!(#s #errors),
    }
}

fn level_ident(l: FeatureLevel) -> Ident {
    format_ident!("{}", l.name())
}

fn dtype_variant(t: DataType) -> Ident {
    format_ident!("{}", format!("{t:?}"))
}

/// The Rust element type of a data type.
fn elem_ty(t: DataType) -> TokenStream {
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

fn expand(s: &ItemStruct, m: &Model) -> TokenStream {
    let ident = &s.ident;
    let vis = &s.vis;
    // The summary is the doc comment's first paragraph, on one line.
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
    let summary = lines
        .iter()
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let doc = docs::render(m, &ident.to_string());
    let info = info(m, ident, &summary);
    let kernel = kernel(m, ident);
    let gpu = gpu_kernels(m);
    let supports = supports_trait(m, ident, vis);
    let methods = methods(m, ident);
    let mut item = s.clone();
    item.attrs.push(syn::parse_quote!(#[doc = #doc]));
    quote! {
        #item

        #supports

        // The kernels are items of this block, out of the user's namespace.
        const _: () = {
            #kernel
            #gpu

            #[automatically_derived]
            impl ::tensorbits::Op for #ident {
                const INFO: &'static ::tensorbits::OpInfo = &#info;
            }
        };

        #methods
    }
}

fn info(m: &Model, ident: &Ident, summary: &str) -> TokenStream {
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
        let l = level_ident(*l);
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
    quote! {
        ::tensorbits::OpInfo {
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
            cpu: __tensorbits_cpu_kernel,
            cpu_flat: __tensorbits_cpu_flat,
            gpu: __TENSORBITS_GPU_KERNELS,
        }
    }
}

/// The element function (from the lowered expression) and the CPU kernel dispatching on data types.
fn kernel(m: &Model, ident: &Ident) -> TokenStream {
    let n = m.inputs.len();
    let body = m.compute.to_rust();
    let needs_int = m.compute.first_int_only_op().is_some();
    let bound = if needs_int {
        quote!(::tensorbits::__private::IntWord)
    } else {
        quote!(::tensorbits::__private::Word)
    };
    let ret = if m.compute.is_count() {
        quote!(u32)
    } else {
        quote!(W)
    };
    // One match arm per (input, output) type pair, calling `runner` (the plan-driven or the flat
    // kernel entry) with the element function at the type's word.
    let arms = |runner: TokenStream, args: TokenStream| -> Vec<TokenStream> {
        m.all_types()
            .into_iter()
            .flat_map(|t| {
                let w = word_ty(t);
                let tv = dtype_variant(t);
                match &m.output {
                    None => vec![quote! {
                        (::tensorbits::DataType::#tv, _) => #runner::<#w, #w, #n>(
                            #args, #ident::__tensorbits_eval::<#w>,
                        ),
                    }],
                    Some(outs) => outs
                        .iter()
                        .map(|o| {
                            let ov = dtype_variant(*o);
                            let oty = elem_ty(*o);
                            quote! {
                                (::tensorbits::DataType::#tv, ::tensorbits::DataType::#ov) =>
                                    #runner::<#w, #oty, #n>(#args, |x| {
                                        <#oty as ::tensorbits::__private::CountOutput>::from_count(
                                            #ident::__tensorbits_eval::<#w>(x),
                                        )
                                    }),
                            }
                        })
                        .collect(),
                }
            })
            .collect()
    };
    let plan_arms = arms(
        quote!(::tensorbits::__private::run),
        quote!(plan, inputs, out),
    );
    let flat_arms = arms(
        quote!(::tensorbits::__private::run_flat),
        quote!(inputs, out),
    );
    quote! {
        // Private to the op's module: the kernels below and the typed methods call it.
        #[automatically_derived]
        impl #ident {
            #[inline(always)]
            fn __tensorbits_eval<W: #bound>(x: [W; #n]) -> #ret {
                #body
            }
        }

        fn __tensorbits_cpu_kernel(
            plan: &::tensorbits::Plan,
            inputs: &[::tensorbits::__private::Src<'_>],
            out: &mut [u8],
        ) {
            match (plan.input_type(), plan.output_type()) {
                #(#plan_arms)*
                // A plan comes only from `validate`, which admits only the types above.
                _ => {}
            }
        }

        fn __tensorbits_cpu_flat(
            input: ::tensorbits::DataType,
            output: ::tensorbits::DataType,
            inputs: &[&[u8]],
            out: &mut [u8],
        ) {
            match (input, output) {
                #(#flat_arms)*
                // Callers validate the types first.
                _ => {}
            }
        }
    }
}

/// The per-op trait that makes unsupported data types compile errors, with a message that names the op,
/// the type and the level and lists what is supported; and, for bit counts, the output-type trait.
fn supports_trait(m: &Model, ident: &Ident, vis: &syn::Visibility) -> TokenStream {
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
        let li = level_ident(l);
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
    quote! {
        #[doc = #doc]
        #[diagnostic::on_unimplemented(message = #message, label = #label, #(note = #notes),*)]
        #vis trait #tr<L: ::tensorbits::Level>: #element {}
        #(#impls)*
        #output
    }
}

/// The typed API: `run`, `run_with`, `run_into` and one `run_in_place_<input>` per `in_place` input.
fn methods(m: &Model, ident: &Ident) -> TokenStream {
    let tr = format_ident!("{}Supports", ident);
    let n = m.inputs.len();
    let inputs = &m.inputs;
    let view = quote!(::core::convert::Into<::tensorbits::TensorView<'x, T>>);
    let params: Vec<TokenStream> = inputs.iter().map(|i| quote!(#i: impl #view)).collect();
    let args: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(::core::convert::Into::into(#i)))
        .collect();
    let (out_generic, out_bound, out_ty) = match &m.output {
        Some(_) => {
            let otr = format_ident!("{}Output", ident);
            (quote!(, O), quote!(O: #otr,), quote!(O))
        }
        None => (quote!(), quote!(), quote!(T)),
    };
    let result = quote!(::core::result::Result);
    let err = quote!(::tensorbits::Error);
    let info = quote!(<Self as ::tensorbits::Op>::INFO);
    // The element function at `T`'s word, for the CPU's small-call path.
    let eval = match &m.output {
        Some(_) => quote! {
            |x| <<O as ::tensorbits::Element>::Word as ::tensorbits::__private::CountOutput>::from_count(
                Self::__tensorbits_eval::<<T as ::tensorbits::Element>::Word>(x),
            )
        },
        None => quote!(Self::__tensorbits_eval::<<T as ::tensorbits::Element>::Word>),
    };
    let out_note = if m.output.is_some() {
        " The output type `O` is one of the op's output types; name it with a type annotation."
    } else {
        ""
    };
    let run_doc = format!(
        "Runs `{ident}` on the CPU at feature level `EXT` with the op's default broadcast mode, into a new tensor.{out_note}"
    );
    let with_doc = format!(
        "Runs `{ident}` on the CPU at the level and broadcast mode of `options`, into a new tensor. A data type \
         the op lacks at that level does not compile.{out_note}"
    );
    let into_doc = format!(
        "Runs `{ident}` on the CPU into `out`, an existing (possibly strided) tensor of the broadcast shape.{out_note}"
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
        "Runs `{ident}` on host tensors on `device` (the CPU, or a GPU with upload and read-back) at the level \
         and broadcast mode of `options`, into a new tensor.{out_note}"
    );
    let in_place = m.in_place.iter().map(|&k| {
        let target = &inputs[k];
        let fname = format_ident!("run_in_place_{}", target);
        let params = inputs.iter().enumerate().map(|(j, i)| {
            if j == k {
                quote!(#i: impl ::core::convert::Into<::tensorbits::TensorViewMut<'y, T>>)
            } else {
                quote!(#i: impl #view)
            }
        });
        let others = inputs
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, i)| quote!(::core::convert::Into::into(#i)));
        let doc = format!(
            "Runs `{ident}` in place: `{target}` is read and overwritten with the result. Its shape must be the \
             broadcast shape."
        );
        quote! {
            #[doc = #doc]
            #[inline]
            pub fn #fname<'x, 'y, L: ::tensorbits::Level, T: #tr<L>>(
                options: &::tensorbits::Options<L>,
                #(#params),*
            ) -> #result<(), #err> {
                ::tensorbits::__private::run_in_place::<T, #n>(
                    #info, &options.call(), #k, ::core::convert::Into::into(#target), &[#(#others),*],
                )
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #ident {
            #[doc = #run_doc]
            #[inline]
            pub fn run<'x, T #out_generic>(#(#params),*) -> #result<::tensorbits::Tensor<#out_ty>, #err>
            where
                T: #tr<::tensorbits::levels::EXT>,
                #out_bound
            {
                ::tensorbits::__private::run_new::<T, #out_ty, #n>(
                    #info, &::tensorbits::Call::default(), [#(#args),*], #eval,
                )
            }

            #[doc = #with_doc]
            #[inline]
            pub fn run_with<'x, L: ::tensorbits::Level, T #out_generic>(
                options: &::tensorbits::Options<L>,
                #(#params),*
            ) -> #result<::tensorbits::Tensor<#out_ty>, #err>
            where
                T: #tr<L>,
                #out_bound
            {
                ::tensorbits::__private::run_new::<T, #out_ty, #n>(
                    #info, &options.call(), [#(#args),*], #eval,
                )
            }

            #[doc = #into_doc]
            #[inline]
            pub fn run_into<'x, 'y, L: ::tensorbits::Level, T #out_generic>(
                options: &::tensorbits::Options<L>,
                #(#params,)*
                out: impl ::core::convert::Into<::tensorbits::TensorViewMut<'y, #out_ty>>,
            ) -> #result<(), #err>
            where
                T: #tr<L>,
                #out_bound
            {
                ::tensorbits::__private::run_into::<T, #out_ty, #n>(
                    #info, &options.call(), [#(#args),*], ::core::convert::Into::into(out), #eval,
                )
            }

            #[doc = #on_doc]
            #[inline]
            pub fn run_on<'x, L: ::tensorbits::Level, T #out_generic>(
                device: &::tensorbits::Device<'_>,
                options: &::tensorbits::Options<L>,
                #(#params),*
            ) -> #result<::tensorbits::Tensor<#out_ty>, #err>
            where
                T: #tr<L>,
                #out_bound
            {
                ::tensorbits::__private::run_on::<T, #out_ty, #n>(
                    device, #info, &options.call(), [#(#args),*], #eval,
                )
            }

            #[doc = #gpu_doc]
            pub fn run_gpu<L: ::tensorbits::Level, T #out_generic>(
                gpu: &::tensorbits::GpuExecutor,
                options: &::tensorbits::Options<L>,
                #(#gpu_params),*
            ) -> #result<::tensorbits::GpuTensor<#out_ty>, #err>
            where
                T: #tr<L>,
                #out_bound
            {
                gpu.run_new::<T, #out_ty, #n>(#info, &options.call(), [#(#inputs),*])
            }

            #(#in_place)*
        }
    }
}

fn layout_ident(l: Layout) -> Ident {
    format_ident!("{}", format!("{l:?}"))
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
            for layout in Layout::ALL {
                if layout == Layout::Words && !m.compute.is_width_agnostic() {
                    continue;
                }
                let eval_class = match layout {
                    Layout::Words if class == WordClass::Bool => WordClass::BoolWord,
                    Layout::Words => WordClass::Word,
                    _ => class,
                };
                let src = shader(layout, kind, n, &m.compute.wgsl_eval(eval_class, n));
                let idx = match sources.iter().position(|s| *s == src) {
                    Some(i) => i,
                    None => {
                        sources.push(src);
                        sources.len() - 1
                    }
                };
                let (tv, ov, lv) = (dtype_variant(t), dtype_variant(o), layout_ident(layout));
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
