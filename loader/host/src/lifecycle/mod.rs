//! Plugins coming and going: loading what discovery found ([`load`]), replacing plugins in a
//! running runner without a gap or a mix ([`reload`]), and watching their files for rebuilds
//! ([`watch`]).

pub mod load;
pub mod reload;
pub mod watch;
