//! Integration tests of `device-filter`: the device-name grammar (tf-semantics §5), TensorFlow's
//! worked filter examples (§4, tf-wire §3), properties, the proto and JSON forms, and
//! differential tests against TensorFlow 2.21 (`tf` module: python found through
//! `TFCLUSTER_PYTHON`, default `<workspace>/target/tf-venv/bin/python`; they fail, never skip,
//! when TensorFlow cannot run).

#[path = "device_filter/examples.rs"]
mod examples;
#[path = "device_filter/grammar.rs"]
mod grammar;
#[path = "device_filter/messages.rs"]
mod messages;
#[path = "device_filter/properties.rs"]
mod properties;
#[path = "device_filter/serialization.rs"]
mod serialization;
#[path = "device_filter/tf.rs"]
mod tf;
#[path = "device_filter/vs_tensorflow.rs"]
mod vs_tensorflow;
