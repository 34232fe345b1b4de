//! Python's `repr` of the values TensorFlow's messages print, for the messages that reuse
//! TensorFlow's wording.

/// The job names `multi_worker`'s rules allow, with `None` (no task type), as TensorFlow prints them.
pub(super) const ALLOWED_REPR: &str = "('chief', 'worker', 'evaluator', 'ps', None)";

/// Python's `repr` of an optional task type (the rules only print allowed names, which need
/// no escaping).
pub(super) fn python_repr(task_type: Option<&str>) -> String {
    task_type.map_or_else(|| "None".to_owned(), |t| format!("'{t}'"))
}

/// Python's `repr` of a set of small non-negative ints, as TensorFlow's message shows the
/// repeated keys: `{7}`, `{1, 2}`.
pub(super) fn python_set(items: &[u32]) -> String {
    let inner: Vec<String> = items.iter().map(u32::to_string).collect();
    format!("{{{}}}", inner.join(", "))
}
