//! The cycles that did not finish and could not be recorded when they happened: a cycle that
//! failed, or a tick skipped because its lease could not be taken, while the database took no
//! writes. Each is kept in memory and recorded in `eval_cycles` once writes work again (the
//! scheduler tries every 10 s), oldest first, so the cycles' history shows every failure.

use std::sync::Mutex;

use crate::store::{CycleRecord, Result, Store};

/// Cycles kept in memory at most while the database is down; past it, the oldest is dropped.
const MAX_KEPT: usize = 1_000;

/// The cycles waiting to be recorded. `sheriff serve` keeps one, shared by its scheduler (which
/// records them) and its HTTP edge; a command that runs one cycle keeps none past it.
#[derive(Debug, Default)]
pub struct Unrecorded {
    kept: Mutex<Vec<CycleRecord>>,
}

impl Unrecorded {
    /// Records `cycle` now, or, when the database takes no writes, keeps it for
    /// [`Unrecorded::record_kept`]; the store's error either way.
    pub async fn record(&self, store: &Store, cycle: &CycleRecord) -> Result<()> {
        let written = store.evaluations().record_cycle(cycle).await;
        if written.is_err() {
            self.keep(cycle.clone());
        }
        written
    }

    /// Keeps a cycle that cannot be recorded now (the newest thousand are kept).
    pub fn keep(&self, cycle: CycleRecord) {
        let mut kept = self.kept.lock().expect("unrecorded cycles lock");
        if kept.len() >= MAX_KEPT {
            tracing::warn!(
                "more than {MAX_KEPT} cycles wait to be recorded; the oldest is dropped"
            );
            kept.remove(0);
        }
        kept.push(cycle);
    }

    /// Records the cycles kept, oldest first; how many. Those it cannot record yet stay kept,
    /// ahead of any kept meanwhile.
    pub async fn record_kept(&self, store: &Store) -> Result<usize> {
        let waiting = std::mem::take(&mut *self.kept.lock().expect("unrecorded cycles lock"));
        for (n, cycle) in waiting.iter().enumerate() {
            if let Err(e) = store.evaluations().record_cycle(cycle).await {
                let mut kept = self.kept.lock().expect("unrecorded cycles lock");
                let newer = std::mem::take(&mut *kept);
                kept.extend(waiting[n..].iter().cloned());
                kept.extend(newer);
                return Err(e);
            }
        }
        Ok(waiting.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_bound_the_oldest_kept_cycle_is_dropped() {
        let u = Unrecorded::default();
        for n in 0..=MAX_KEPT as i64 {
            u.keep(CycleRecord {
                evaluated_at: n,
                ..Default::default()
            });
        }
        let kept = u.kept.lock().unwrap();
        assert_eq!(kept.len(), MAX_KEPT);
        assert_eq!(kept[0].evaluated_at, 1, "the oldest went");
        assert_eq!(kept[MAX_KEPT - 1].evaluated_at, MAX_KEPT as i64);
    }
}
