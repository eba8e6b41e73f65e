//! Feature levels as types, so a call's level is checked at compile time.

use crate::FeatureLevel;

/// A feature level as a type: the markers in [`levels`].
pub trait Level: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// The level this marker stands for.
    const LEVEL: FeatureLevel;
}

/// One marker type per feature level, for the typed API: `Options::at(FL_3_0)`.
#[allow(
    non_camel_case_types,
    reason = "the names mirror DML_FEATURE_LEVEL_x_y"
)]
pub mod levels {
    use super::Level;
    use crate::FeatureLevel;

    macro_rules! level_markers {
        ($($name:ident)*) => {$(
            #[doc = concat!("The feature level `", stringify!($name), "` as a type.")]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct $name;
            impl Level for $name {
                const LEVEL: FeatureLevel = FeatureLevel::$name;
            }
        )*};
    }

    level_markers! {
        FL_1_0 FL_2_0 FL_2_1 FL_3_0 FL_3_1 FL_4_0 FL_4_1 FL_5_0 FL_5_1 FL_5_2 FL_5_3
        FL_6_0 FL_6_1 FL_6_2 FL_6_3 FL_6_4 EXT
    }
}
