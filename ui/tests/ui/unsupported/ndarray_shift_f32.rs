// ndarray views go through the same table: shifts have no f32.
use tensorbits::ndarray::{ArrayD, array};
use tensorbits::{NdOp, Options, ops::BitShiftLeft};

fn main() {
    let a = array![1.5f32, 2.0];
    let _: Result<ArrayD<f32>, _> = BitShiftLeft::run_nd(&Options::new(), &[a.view(), a.view()]);
}
