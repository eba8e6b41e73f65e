//! The typed methods (`run`, `run_with`, `run_into`, in place, `run_on`, `run_gpu`, `knn`, ...):
//! their signatures, built in one place ([`methods`]) for a valid spec and for the fallback alike,
//! so that a spec with mistakes still gives its users the methods they call; the names of their
//! parameters beside the inputs ([`Method::params`], [`RESERVED`]); and the bodies of a valid op's.

use crate::types::{elem_ty, fold_call};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;
use tensorbits_core::{DataType, ReduceOp};

/// Names of the generated methods' parameters beside the inputs; an input may not take one.
pub const OPTIONS: &str = "options";
pub const OUT: &str = "out";
pub const TARGET: &str = "target";
pub const GPU: &str = "gpu";
pub const K: &str = "k";
pub const THRESHOLD: &str = "threshold";
pub const RESERVED: &[&str] = &[OPTIONS, OUT, TARGET, GPU];
/// Beside those, the parameters of a pairwise op's `knn` and `range_search` methods.
pub const RESERVED_PAIRWISE: &[&str] = &[K, THRESHOLD];

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
    /// For a pairwise sum of a common expression's counts: the runtime's pair kernel for it.
    pub pair_form: Option<TokenStream>,
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
    Range,
    RangeWith,
}

impl Method {
    /// The names of the method's parameters beside the inputs, in order.
    pub fn params(self) -> &'static [&'static str] {
        match self {
            Method::Run => &[],
            Method::RunWith | Method::InPlace(_) => &[OPTIONS],
            Method::RunInto => &[OPTIONS, OUT],
            Method::RunOn => &[TARGET, OPTIONS],
            Method::RunGpu => &[GPU, OPTIONS],
            Method::Knn => &[K],
            Method::KnnWith => &[OPTIONS, K],
            Method::KnnOn => &[TARGET, OPTIONS, K],
            Method::Range => &[THRESHOLD],
            Method::RangeWith => &[OPTIONS, THRESHOLD],
        }
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
pub fn method_body(sig: &Signature<'_>, method: Method) -> TokenStream {
    if sig.reduce.is_some() {
        return reduce_body(sig, method);
    }
    let n = sig.inputs.len();
    let inputs = &sig.inputs;
    let args: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(::tensorbits::IntoView::into_view(#i)))
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
        _ => quote!(#options.call_ref()),
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
                .map(|(_, i)| quote!(::tensorbits::IntoView::into_view(#i)));
            quote! {
                ::tensorbits::__private::run_in_place::<T, #n>(
                    #meta, #call, #k, ::core::convert::Into::into(#target), &[#(#others),*], #eval,
                )
            }
        }
        Method::Knn | Method::KnnWith | Method::KnnOn | Method::Range | Method::RangeWith => {
            quote!(::core::unreachable!())
        }
    }
}

/// The body of a method of a reduction or pairwise op: its kernels made from the element function
/// at `T`'s word, and the runtime's entry for reductions.
fn reduce_body(sig: &Signature<'_>, method: Method) -> TokenStream {
    let n = sig.inputs.len();
    let inputs = &sig.inputs;
    let args: Vec<TokenStream> = inputs
        .iter()
        .map(|i| quote!(::tensorbits::IntoView::into_view(#i)))
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
        Method::Knn | Method::Range => new_output(sig, Method::Run),
        Method::KnnWith | Method::KnnOn | Method::RangeWith => new_output(sig, Method::RunWith),
        _ => new_output(sig, method),
    };
    let call = match method {
        Method::Run | Method::Knn | Method::Range => quote!(&::tensorbits::Call::default()),
        _ => quote!(#options.call_ref()),
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
        let use_wide = sig.wide;
        let run = match &sig.pair_form {
            Some(f) => f.clone(),
            None => quote!(Self::__tensorbits_pair::<#word>),
        };
        quote!(::core::option::Option::Some(::tensorbits::__private::PairRef {
            run: &#run,
            wide: #use_wide,
        }))
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
                #meta, #call, ::tensorbits::IntoView::into_view(#a), ::tensorbits::IntoView::into_view(#b), #k, &kernels,
            )
        },
        Method::KnnOn => quote! {
            #kernels
            ::tensorbits::__private::knn_on::<T, #o>(
                #target, #meta, #call, ::tensorbits::IntoView::into_view(#a), ::tensorbits::IntoView::into_view(#b), #k, &kernels,
            )
        },
        Method::Range | Method::RangeWith => {
            let threshold = format_ident!("{THRESHOLD}");
            quote! {
                #kernels
                ::tensorbits::__private::range_new::<T, #o>(
                    #meta, #call, ::tensorbits::IntoView::into_view(#a), ::tensorbits::IntoView::into_view(#b), #threshold, &kernels,
                )
            }
        }
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
    let view = quote!(::tensorbits::IntoView<'x, T>);
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
        let threshold = format_ident!("{THRESHOLD}");
        let range_run = quote!(#result<::tensorbits::RangeHits<#run_o>, #err>);
        let range_with = quote!(#result<::tensorbits::RangeHits<#with_o>, #err>);
        let range_doc = format!(
            "For each row of `{a}` (`[M, K]`), every row of `{b}` (`[N, K]`) whose result under `{ident}` passes \
             `{threshold}`, on the CPU at feature level `EXT`: below it for an op whose nearest results are the \
             smallest (a Hamming radius, as FAISS's `range_search`), at least it for one ranked largest first. \
             The hits come in FAISS's layout, each row's in ascending index order. The `M x N` results are never \
             held at once; a NaN `{threshold}` is an error.",
            a = inputs[0],
            b = inputs[1],
        );
        let range_with_doc = format!(
            "[`range_search`](Self::range_search) at the level of `options`, with the values' type and order \
             they choose.{out_note}"
        );
        let (b_range, b_range_with) = (body(Method::Range), body(Method::RangeWith));
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

                #[doc = #range_doc]
                pub fn range_search<'x, T>(#(#params,)* #threshold: f64) -> #range_run
                where
                    T: #tr<::tensorbits::levels::EXT>,
                {
                    #b_range
                }

                #[doc = #range_with_doc]
                pub fn range_search_with<'x, L: ::tensorbits::Level, T #choice>(
                    #options: &#options_ty,
                    #(#params,)*
                    #threshold: f64,
                ) -> #range_with
                where
                    T: #tr<L>,
                    #choice_bound
                {
                    #b_range_with
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
