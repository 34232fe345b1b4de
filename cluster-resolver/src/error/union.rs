//! [`Error`]: why a union of resolvers cannot be built or merged.

use cluster_spec::__private::quote::excerpt;

/// Why a [`UnionClusterResolver`](crate::UnionClusterResolver) cannot be built or its specs
/// cannot be merged (TensorFlow's wording first).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A union was given no resolvers (TensorFlow's wording).
    #[error("At least one ClusterResolver is required.")]
    NoResolvers,
    /// Two resolvers of a union give the same task index of a job merged by index
    /// (TensorFlow's wording, then the job).
    #[error(
        "Duplicate keys detected when merging two ClusterSpecs: {} (job '{}')",
        excerpt(&python_set(.tasks), 0),
        excerpt(.job, 0)
    )]
    DuplicateTasks {
        /// The job.
        job: String,
        /// The task indices given twice, ascending.
        tasks: Vec<u32>,
    },
}

/// Python's `repr` of a set of small non-negative ints, as TensorFlow's message shows the
/// repeated keys: `{7}`, `{1, 2}`.
fn python_set(items: &[u32]) -> String {
    let inner: Vec<String> = items.iter().map(u32::to_string).collect();
    format!("{{{}}}", inner.join(", "))
}
