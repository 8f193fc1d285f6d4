//! The driver's wire shape (crates/driver's `output`) as JavaScript values, through napi's
//! serde support: the outputs as one array of objects, the glue's options and summary read the
//! same way. Declared once, in the driver; `lib/addon/wire.d.ts` types it for the glue.

use ctl_migration_driver::Output;
use napi::bindgen_prelude::*;
use napi::JsValue;
use serde::de::DeserializeOwned;

/// The outputs one call hands the glue, as an array of objects.
pub struct Actions(pub Vec<Output>);

impl ToNapiValue for Actions {
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        Ok(Env::from_raw(env).to_js_value(&val.0)?.raw())
    }
}

/// A value of the wire's shape, from the glue.
pub struct FromWire<T>(pub T);

impl<T: DeserializeOwned> FromNapiValue for FromWire<T> {
    unsafe fn from_napi_value(
        env: napi::sys::napi_env,
        value: napi::sys::napi_value,
    ) -> Result<Self> {
        let value = Unknown::from_napi_value(env, value)?;
        Env::from_raw(env).from_js_value(value).map(FromWire)
    }
}

impl<T> TypeName for FromWire<T> {
    fn type_name() -> &'static str {
        "Object"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<T: DeserializeOwned> ValidateNapiValue for FromWire<T> {}
