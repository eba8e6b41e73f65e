// The output type of an ndarray call must be one the op writes: BIT_COUNT writes u8 or u32.
use tensorbits::ndarray::{ArrayD, array};
use tensorbits::{NdOp, Options, ops::BitCount};

fn main() {
    let a = array![1u16, 2];
    let _: Result<ArrayD<i64>, _> = BitCount::run_nd(&Options::new(), &[a.view()]);
}
