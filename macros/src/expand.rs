//! Expansion: the pipeline (parse -> validate -> expand) and the generated items. The typed methods'
//! signatures are built in one place ([`methods`]) for a valid spec and for the fallback alike, so a
//! spec with mistakes still gives its users the methods they call.

use crate::ctxt::Ctxt;
use crate::valid::Model;
use crate::{ast, docs, fallback, valid};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Fields, Ident, ItemStruct};
use tensorbits_core::wgsl::{KernelKind, Layout, WordClass, shader};
use tensorbits_core::{BroadcastMode, DataType, FeatureLevel};

/// Names of the generated methods' parameters beside the inputs; an input may not take one.
const OPTIONS: &str = "options";
const OUT: &str = "out";
const TARGET: &str = "target";
const GPU: &str = "gpu";
pub const RESERVED: &[&str] = &[OPTIONS, OUT, TARGET, GPU];

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
    };
    let parts = |cpu: TokenStream| parts(m, ident, &summary, cpu);
    let info = parts(quote!(__TENSORBITS_CPU_KERNELS));
    let meta = parts(quote!(&[]));
    let cpu = cpu_kernels(m, ident);
    let gpu = gpu_kernels(m);
    let traits = supports_traits(m, ident, &s.vis);
    let eval = eval_fn(m);
    let methods = methods(&sig, &|method| method_body(&sig, method));
    let mut item = s.clone();
    item.attrs.push(syn::parse_quote!(#[doc = #doc]));
    quote! {
        #item

        #traits

        // The kernels and metadata are items of this block, out of the user's namespace.
        const _: () = {
            #cpu
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

fn parts(m: &Model, ident: &Ident, summary: &str, cpu: TokenStream) -> TokenStream {
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
            cpu: #cpu,
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
/// that share a word (`f32` and `u32`) share a kernel.
fn cpu_kernels(m: &Model, ident: &Ident) -> TokenStream {
    let n = m.inputs.len();
    let mut fns: Vec<(String, TokenStream)> = Vec::new();
    let mut entries = Vec::new();
    for t in m.all_types() {
        let w = word_ty(t);
        let outs = m.output.clone().unwrap_or_else(|| vec![t]);
        for o in outs {
            let (o_word, call) = if m.output.is_some() {
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
                }
            });
        }
    }
    let fns = fns.iter().map(|(_, f)| f);
    quote! {
        #(#fns)*
        const __TENSORBITS_CPU_KERNELS: &[::tensorbits::__private::CpuKernel] = &[#(#entries),*];
    }
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
    quote! {
        #[doc = #doc]
        #[diagnostic::on_unimplemented(message = #message, label = #label, #(note = #notes),*)]
        #vis trait #tr<L: ::tensorbits::Level>: #element {}
        #(#impls)*
        #output
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
