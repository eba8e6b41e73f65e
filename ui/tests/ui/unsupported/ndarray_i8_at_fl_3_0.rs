// The options' feature level bounds the types: i8 XOR arrives at FL_4_1.
use tensorbits::levels::FL_3_0;
use tensorbits::ndarray::{ArrayD, array};
use tensorbits::{NdOp, Options, ops::BitXor};

fn main() {
    let a = array![1i8, 2];
    let _: Result<ArrayD<i8>, _> = BitXor::run_nd(&Options::at(FL_3_0), &[a.view(), a.view()]);
}
