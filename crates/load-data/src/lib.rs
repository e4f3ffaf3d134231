//! What a load run reports, as data: the report (responses, errors by class, latency percentiles,
//! the open loop's counts, where each exchange's time went), the HDR histograms it is made from
//! in their portable form, and the thresholds a report is held to. The generator
//! (`wasmlab-load`) makes these; the lab's data model stores and reads them without the
//! generator's runtime (tokio, hyper, rustls), as sightglass's `data` crate holds its results.

mod histogram;
mod phases;
mod report;
mod threshold;

pub use histogram::{
    LatencyMs, MAX_TRACKED_NS, histogram_buckets, histogram_from_buckets, new_histogram, record,
};
pub use phases::Phases;
pub use report::{ErrorCounts, LATE_AFTER, LoadReport, OpenLoop, SATURATED_SHARE};
pub use threshold::{Crossed, Threshold};
