//! A script's answer as JSON: the last line it prints.

use serde_json::Value;

/// Runs `script` under TensorFlow's python (as [`run`](crate::run): it fails loudly when
/// TensorFlow is missing and never hangs) with `input` as JSON on stdin, and returns the JSON of
/// the last non-empty line it prints.
///
/// # Panics
///
/// As [`run`](crate::run), and if that line is not JSON (the panic shows all of stdout).
pub fn run_json(script: &str, input: &Value) -> Value {
    let stdout = crate::run(script, &input.to_string());
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("TensorFlow's script printed no JSON ({e}):\n{stdout}"))
}

/// TensorFlow's `answers` (a JSON array) with exactly one answer per case.
///
/// Differential tests zip the cases with TensorFlow's answers, and a zip stops at the shorter
/// side: a script that answered nothing would check nothing and pass.
///
/// # Panics
///
/// If `answers` is not an array of `cases` values.
pub fn one_per_case(answers: &Value, cases: usize) -> &[Value] {
    let list = answers.as_array().unwrap_or_else(|| {
        let text: String = answers.to_string().chars().take(200).collect();
        panic!("TensorFlow's answers are not a list: {text}")
    });
    assert_eq!(
        list.len(),
        cases,
        "TensorFlow answered {} cases of {cases}",
        list.len()
    );
    list
}
