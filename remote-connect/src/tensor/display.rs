//! `Display` for [`Tensor`], as TensorFlow prints a tensor (`print(t)`):
//! `tf.Tensor(<numpy's str of the value>, shape=(2, 2), dtype=float32)`, with numpy's default
//! print options (8 digits, 75 columns, more than 1,000 elements summarized with `...`).

use std::fmt;

use cluster_proto::DataType;

use super::error::dtype_name;
use super::{Data, Tensor};

const LINE_WIDTH: usize = 75;
const THRESHOLD: u64 = 1000;
const EDGE_ITEMS: usize = 3;
const PRECISION: usize = 8;

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = numpy_str(self);
        let shape = match self.shape.as_slice() {
            [one] => format!("({one},)"),
            dims => format!(
                "({})",
                dims.iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let sep = if value.contains('\n') { "\n" } else { "" };
        write!(
            f,
            "tf.Tensor({sep}{value}, shape={shape}, dtype={})",
            dtype_name(self.dtype)
        )
    }
}

/// Each element as text before padding, or `None` for dtypes numpy has no plain form for here.
fn elements(tensor: &Tensor) -> Option<Vec<Element>> {
    use DataType as D;
    let t = tensor;
    Some(match (&t.data, t.dtype) {
        (Data::Strings(s), _) => s.iter().map(|b| Element::Bytes(bytes_repr(b))).collect(),
        (_, D::DtFloat) => floats(t.to_vec::<f32>().ok()?, true),
        (_, D::DtDouble) => floats(t.to_vec::<f64>().ok()?, false),
        (_, D::DtBool) => t
            .to_vec::<bool>()
            .ok()?
            .into_iter()
            .map(Element::Bool)
            .collect(),
        (_, D::DtInt8) => ints(t.to_vec::<i8>().ok()?),
        (_, D::DtInt16) => ints(t.to_vec::<i16>().ok()?),
        (_, D::DtInt32) => ints(t.to_vec::<i32>().ok()?),
        (_, D::DtInt64) => ints(t.to_vec::<i64>().ok()?),
        (_, D::DtUint8) => ints(t.to_vec::<u8>().ok()?),
        (_, D::DtUint16) => ints(t.to_vec::<u16>().ok()?),
        (_, D::DtUint32) => ints(t.to_vec::<u32>().ok()?),
        (_, D::DtUint64) => ints(t.to_vec::<u64>().ok()?),
        _ => return None,
    })
}

#[derive(Clone, Debug)]
enum Element {
    /// An integer's digits, right-aligned to the widest.
    Int(String),
    /// A string's `b'...'`, never padded.
    Bytes(String),
    Bool(bool),
    Float(f64, bool),
}

fn ints<T: ToString>(values: Vec<T>) -> Vec<Element> {
    values
        .into_iter()
        .map(|v| Element::Int(v.to_string()))
        .collect()
}

fn floats<T: Into<f64>>(values: Vec<T>, single: bool) -> Vec<Element> {
    values
        .into_iter()
        .map(|v| Element::Float(v.into(), single))
        .collect()
}

fn numpy_str(tensor: &Tensor) -> String {
    let n = tensor.num_elements();
    if !tensor.shape.is_empty() && n == 0 {
        return elements(tensor).map_or_else(|| "<0 bytes>".into(), |_| "[]".into());
    }
    let shape: Vec<usize> = tensor.shape.iter().map(|&d| d as usize).collect();
    let summarize = n > THRESHOLD;
    let shown = shown_indices(&shape, summarize);
    // Only the shown elements become text: a tensor of millions prints a few dozen.
    let Some(picked) = elements(&pick(tensor, &shown)) else {
        return format!("<{} bytes>", tensor.as_bytes().map_or(0, <[u8]>::len));
    };
    if tensor.shape.is_empty() {
        return picked.first().map(scalar).unwrap_or_default();
    }
    let format = Format::of(picked.iter());
    Printer {
        shown: &shown,
        picked: &picked,
        shape: &shape,
        summarize,
        format: &format,
    }
    .recurse(&mut Vec::new(), " ", LINE_WIDTH)
}

/// The elements of `tensor` at the row-major indices `shown`, as a vector of its dtype.
fn pick(tensor: &Tensor, shown: &[usize]) -> Tensor {
    let data = match &tensor.data {
        Data::Packed(bytes) => {
            let width = bytes.len() / tensor.num_elements().max(1) as usize;
            Data::Packed(
                shown
                    .iter()
                    .flat_map(|&i| &bytes[i * width..(i + 1) * width])
                    .copied()
                    .collect(),
            )
        }
        Data::Strings(strings) => {
            Data::Strings(shown.iter().map(|&i| strings[i].clone()).collect())
        }
    };
    Tensor {
        dtype: tensor.dtype,
        shape: vec![shown.len() as u64],
        data,
    }
}

/// Row-major indices of the elements numpy shows (all, or the edges of each axis).
fn shown_indices(shape: &[usize], summarize: bool) -> Vec<usize> {
    let mut out = Vec::new();
    fn go(shape: &[usize], base: usize, summarize: bool, out: &mut Vec<usize>) {
        let Some((&n, rest)) = shape.split_first() else {
            out.push(base);
            return;
        };
        let stride: usize = rest.iter().product();
        for i in axis_items(n, summarize).into_iter().flatten() {
            go(rest, base + i * stride, summarize, out);
        }
    }
    go(shape, 0, summarize, &mut out);
    out
}

/// The items of an axis numpy shows: all, or the first and last [`EDGE_ITEMS`] (the `None`
/// between them is the `...`).
fn axis_items(n: usize, summarize: bool) -> Vec<Option<usize>> {
    if summarize && n > 2 * EDGE_ITEMS {
        (0..EDGE_ITEMS)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((n - EDGE_ITEMS..n).map(Some))
            .collect()
    } else {
        (0..n).map(Some).collect()
    }
}

struct Printer<'a> {
    /// The row-major indices shown, ascending, and their elements.
    shown: &'a [usize],
    picked: &'a [Element],
    shape: &'a [usize],
    summarize: bool,
    format: &'a Format,
}

impl Printer<'_> {
    /// numpy's `_formatArray` recursion (numpy ≥ 1.14 layout).
    fn recurse(&self, index: &mut Vec<usize>, hanging: &str, width: usize) -> String {
        let axis = index.len();
        if axis == self.shape.len() {
            let flat = index
                .iter()
                .zip(self.shape)
                .fold(0, |acc, (&i, &n)| acc * n + i);
            let at = self
                .shown
                .binary_search(&flat)
                .expect("the printer visits only shown elements");
            return self.format.apply(&self.picked[at]);
        }
        let next_hanging = format!("{hanging} ");
        // numpy's width goes negative past 75 axes (then every element wraps); ours stops at 0.
        let next_width = width.saturating_sub(1);
        let axes_left = self.shape.len() - axis;
        let items = axis_items(self.shape[axis], self.summarize);
        let mut s = String::new();
        if axes_left == 1 {
            let mut line = hanging.to_string();
            let last = items.len() - 1;
            for (k, item) in items.iter().enumerate() {
                let word = match item {
                    Some(i) => {
                        index.push(*i);
                        let w = self.recurse(index, &next_hanging, next_width);
                        index.pop();
                        w
                    }
                    None => "...".to_string(),
                };
                // Room for the closing bracket.
                extend_line(&mut s, &mut line, &word, width.saturating_sub(1), hanging);
                if k != last {
                    line.push(' ');
                }
            }
            s.push_str(&line);
        } else {
            let line_sep = "\n".repeat(axes_left - 1);
            let last = items.len() - 1;
            for (k, item) in items.iter().enumerate() {
                s.push_str(hanging);
                match item {
                    Some(i) => {
                        index.push(*i);
                        s.push_str(&self.recurse(index, &next_hanging, next_width));
                        index.pop();
                    }
                    None => s.push_str("..."),
                }
                if k != last {
                    s.push_str(&line_sep);
                }
            }
        }
        format!("[{}]", &s[hanging.len()..])
    }
}

fn extend_line(s: &mut String, line: &mut String, word: &str, width: usize, hanging: &str) {
    let wrap = line.len() + word.len() > width && line.len() > hanging.len();
    if wrap {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = hanging.to_string();
    }
    line.push_str(word);
}

/// How every shown element is padded: numpy's `FloatingFormat`, `IntegerFormat`, `BoolFormat`.
enum Format {
    Plain(usize),
    Bool,
    Positional {
        left: usize,
        right: usize,
    },
    Scientific {
        left: usize,
        digits: usize,
        exp: usize,
    },
}

impl Format {
    fn of<'a>(shown: impl Iterator<Item = &'a Element> + Clone) -> Format {
        let first = shown.clone().next();
        match first {
            // numpy pads every boolean of an array to `False`'s width.
            Some(Element::Bool(_)) => Format::Bool,
            Some(Element::Float(..)) => float_format(shown),
            Some(Element::Int(_)) => Format::Plain(
                shown
                    .filter_map(|e| match e {
                        Element::Int(t) => Some(t.len()),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0),
            ),
            _ => Format::Plain(0),
        }
    }

    fn apply(&self, e: &Element) -> String {
        match (self, e) {
            (Format::Plain(w), Element::Int(t) | Element::Bytes(t)) => format!("{t:>w$}"),
            (Format::Bool, Element::Bool(b)) => format!("{:>5}", if *b { "True" } else { "False" }),
            (Format::Positional { left, right }, Element::Float(v, single)) => {
                positional(*v, *single, *left, *right)
            }
            (Format::Scientific { left, digits, exp }, Element::Float(v, single)) => {
                scientific(*v, *single, *left, *digits, *exp)
            }
            (_, other) => scalar(other),
        }
    }
}

/// numpy's choice between positional and scientific notation, and the pads that align every
/// shown value.
fn float_format<'a>(shown: impl Iterator<Item = &'a Element> + Clone) -> Format {
    let finite: Vec<(f64, bool)> = shown
        .clone()
        .filter_map(|e| match e {
            Element::Float(v, s) if v.is_finite() => Some((*v, *s)),
            _ => None,
        })
        .collect();
    let abs_nonzero: Vec<f64> = finite
        .iter()
        .map(|(v, _)| v.abs())
        .filter(|v| *v != 0.0)
        .collect();
    let max = abs_nonzero.iter().copied().fold(0.0, f64::max);
    let min = abs_nonzero.iter().copied().fold(f64::INFINITY, f64::min);
    let exp_format = !abs_nonzero.is_empty() && (max >= 1e8 || min < 1e-4 || max / min > 1e3);
    let non_finite_width = shown
        .filter_map(|e| match e {
            Element::Float(v, _) if !v.is_finite() => Some(non_finite(*v).len()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    if exp_format {
        // Scientific: every mantissa gets as many digits as the longest needs (zero-padded).
        let parts: Vec<(String, String)> = finite.iter().map(|&(v, s)| sci_parts(v, s)).collect();
        let left = parts
            .iter()
            .map(|(m, _)| m.split_once('.').map_or(m.len(), |(i, _)| i.len()))
            .max()
            .unwrap_or(1);
        let digits = parts
            .iter()
            .map(|(m, _)| m.split_once('.').map_or(0, |(_, f)| f.len()))
            .max()
            .unwrap_or(0);
        let exp = parts
            .iter()
            .map(|(_, e)| e.trim_start_matches(['-', '+']).len())
            .max()
            .unwrap_or(2)
            .max(2);
        return Format::Scientific { left, digits, exp };
    }
    let parts: Vec<String> = finite.iter().map(|&(v, s)| digits(v, s)).collect();
    let mut left = parts
        .iter()
        .map(|p| p.split_once('.').map_or(p.len(), |(i, _)| i.len()))
        .max()
        .unwrap_or(0);
    let right = parts
        .iter()
        .map(|p| p.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    // nan and inf must fit in the whole width.
    let whole = left + right + 1;
    if non_finite_width > whole {
        left += non_finite_width - whole;
    }
    Format::Positional { left, right }
}

/// The shortest digits that read back as the same value (of its own precision), at most
/// [`PRECISION`] after the point, integral values ending in `.`.
fn digits(v: f64, single: bool) -> String {
    let shortest = if single {
        format!("{}", v as f32)
    } else {
        format!("{v}")
    };
    let text = match shortest.split_once('.') {
        Some((_, frac)) if frac.len() > PRECISION => {
            let rounded = format!("{v:.PRECISION$}");
            rounded.trim_end_matches('0').to_string()
        }
        Some(_) => shortest,
        None => format!("{shortest}."),
    };
    if text == "-0." && v == 0.0 && !v.is_sign_negative() {
        "0.".into()
    } else {
        text
    }
}

fn positional(v: f64, single: bool, left: usize, right: usize) -> String {
    if !v.is_finite() {
        return format!("{:>w$}", non_finite(v), w = left + right + 1);
    }
    let d = digits(v, single);
    let (int, frac) = d.split_once('.').unwrap_or((&d, ""));
    format!("{int:>left$}.{frac:<right$}")
}

/// Mantissa (shortest, `.`-terminated when integral) and exponent of `v` in scientific form.
fn sci_parts(v: f64, single: bool) -> (String, String) {
    let e = if single {
        format!("{:e}", v as f32)
    } else {
        format!("{v:e}")
    };
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let mut mantissa = mantissa.to_string();
    if let Some((_, frac)) = mantissa.split_once('.')
        && frac.len() > PRECISION
    {
        let rounded = format!("{:.PRECISION$e}", v);
        mantissa = rounded.split_once('e').map_or(rounded.clone(), |(m, _)| {
            m.trim_end_matches('0').to_string()
        });
    }
    if !mantissa.contains('.') {
        mantissa.push('.');
    }
    (mantissa, exp.to_string())
}

fn scientific(v: f64, single: bool, left: usize, digits: usize, exp_digits: usize) -> String {
    if !v.is_finite() {
        let text = non_finite(v);
        return format!("{text:>w$}", w = left + digits + exp_digits + 3);
    }
    let (mantissa, exp) = sci_parts(v, single);
    let (int, frac) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let (sign, e) = match exp.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exp.as_str()),
    };
    format!("{int:>left$}.{frac:0<digits$}e{sign}{e:0>exp_digits$}")
}

fn non_finite(v: f64) -> &'static str {
    if v.is_nan() {
        "nan"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// A 0-d value as numpy's `str` of a scalar prints it.
fn scalar(e: &Element) -> String {
    match e {
        Element::Int(t) | Element::Bytes(t) => t.clone(),
        Element::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Element::Float(v, single) => {
            if !v.is_finite() {
                return non_finite(*v).to_string();
            }
            let a = v.abs();
            if a != 0.0 && !(1e-4..1e16).contains(&a) {
                let (m, e) = sci_parts(*v, *single);
                let m = m.trim_end_matches('.');
                let (sign, d) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e.as_str()),
                };
                format!("{m}e{sign}{d:0>2}")
            } else {
                let d = if *single {
                    format!("{}", *v as f32)
                } else {
                    format!("{v}")
                };
                if d.contains('.') { d } else { format!("{d}.0") }
            }
        }
    }
}

/// Python's `repr` of a `bytes` value: `b'...'`, double-quoted when it holds `'` but no `"`.
fn bytes_repr(b: &[u8]) -> String {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') {
        '"'
    } else {
        '\''
    };
    let mut out = format!("b{quote}");
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            c if c == quote as u8 => {
                out.push('\\');
                out.push(c as char);
            }
            0x20..=0x7e => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push(quote);
    out
}
