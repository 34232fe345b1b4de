//! serde support: a [`ClusterSpec`] (de)serializes as the TF_CONFIG `cluster` object, so it can
//! sit inside a larger document such as a whole TF_CONFIG.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

use crate::builder::Assembler;
use crate::spec::{ClusterSpec, Job};

impl Serialize for ClusterSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.jobs.len()))?;
        for job in &self.jobs {
            map.serialize_entry(self.job_name(job), &JobTasks { spec: self, job })?;
        }
        map.end()
    }
}

/// One job's tasks in TensorFlow's `as_dict` form.
struct JobTasks<'a> {
    spec: &'a ClusterSpec,
    job: &'a Job,
}

impl Serialize for JobTasks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tasks = self
            .job
            .tasks
            .iter()
            .map(|t| (t.index, self.spec.str_of(t.address)));
        if self.job.is_dense() && !self.job.tasks.is_empty() {
            serializer.collect_seq(tasks.map(|(_, address)| address))
        } else {
            // Keys as decimal strings, the only keys JSON has.
            serializer.collect_map(tasks.map(|(index, address)| (index.to_string(), address)))
        }
    }
}

impl<'de> Deserialize<'de> for ClusterSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ClusterVisitor)
    }
}

struct ClusterVisitor;

impl<'de> Visitor<'de> for ClusterVisitor {
    type Value = ClusterSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from job names to lists or maps of task addresses")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClusterSpec, A::Error> {
        let mut assembler = Assembler::new();
        while let Some(name) = map.next_key::<Cow<'de, str>>()? {
            assembler.begin_job(&name).map_err(de::Error::custom)?;
            map.next_value_seed(TasksSeed {
                assembler: &mut assembler,
                job: &name,
            })?;
            assembler.end_job().map_err(de::Error::custom)?;
        }
        assembler.finish().map_err(de::Error::custom)
    }
}

/// Reads one job's tasks, a list or a map, straight into the assembler.
struct TasksSeed<'a> {
    assembler: &'a mut Assembler,
    job: &'a str,
}

impl<'de> DeserializeSeed<'de> for TasksSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TasksSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the tasks for job '{}' as a list or a dictionary from integers to strings",
            self.job
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(address) = seq.next_element::<Cow<'de, str>>()? {
            let index = self.assembler.next_dense_index();
            self.assembler
                .task(index, &address)
                .map_err(de::Error::custom)?;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let index = crate::json::task_index(self.job, &key).map_err(de::Error::custom)?;
            let address = map.next_value::<Cow<'de, str>>()?;
            self.assembler
                .task(index, &address)
                .map_err(de::Error::custom)?;
        }
        Ok(())
    }
}
