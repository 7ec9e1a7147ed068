//! The workspaces of one encoder: a pool of them, lent to one call at a time, and the
//! short cache that the threads of one parallel encode share.

use std::sync::Mutex;

use super::workspace::{short_lines_for, Workspace, SHORT_LINES};
use crate::encode::cache::ShortCache;
use crate::error::Result;

/// An encoder's workspaces: those not lent out, and the shared short cache.
///
/// Boxed, so lending one and taking it back moves a pointer: moved by value, the
/// struct was copied six times a call (callgrind: ~380 of the ~7.8 K instructions of
/// `encode("hello world")` with OLMo 2).
#[derive(Debug, Default)]
pub(crate) struct Workspaces {
    #[allow(clippy::vec_box)] // boxed to lend by pointer, as said above
    pool: Mutex<Vec<Box<Workspace>>>,
    /// The short cache that the threads of a parallel encode share (see
    /// [`Workspaces::lease_shared`]), made on first use.
    shared_short: Mutex<Option<ShortCache>>,
}

/// A workspace borrowed from a [`Workspaces`] pool, given back on drop.
pub(crate) struct Lease<'a> {
    owner: &'a Workspaces,
    ws: Option<Box<Workspace>>,
    /// The workspace's own short table while it holds a handle on the shared one.
    own_short: Option<ShortCache>,
}

impl std::ops::Deref for Lease<'_> {
    type Target = Workspace;
    fn deref(&self) -> &Workspace {
        self.ws.as_ref().expect("workspace present until drop")
    }
}

impl std::ops::DerefMut for Lease<'_> {
    fn deref_mut(&mut self) -> &mut Workspace {
        self.ws.as_mut().expect("workspace present until drop")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let (Some(ws), Some(own)) = (self.ws.as_mut(), self.own_short.take()) {
            ws.short = own;
        }
        if let (Some(ws), Ok(mut pool)) = (self.ws.take(), self.owner.pool.lock()) {
            if pool.len() < 64 {
                pool.push(ws);
            }
        }
    }
}

impl Workspaces {
    /// A workspace from the pool, or a new one (an error where its memory cannot be
    /// had).
    pub(crate) fn lease(&self) -> Result<Lease<'_>> {
        let ws = match self.pool.lock().ok().and_then(|mut p| p.pop()) {
            Some(ws) => ws,
            None => Box::new(Workspace::new()?),
        };
        Ok(Lease {
            owner: self,
            ws: Some(ws),
            own_short: None,
        })
    }

    /// A workspace for one of several threads encoding parts of the same data: its
    /// short table is a handle on a table all of them share (where the machine allows
    /// it: [`ShortCache::can_share`]), so a piece one thread has merged is a hit for
    /// the others.
    ///
    /// Why: with a table per thread, each thread merged the frequent pieces again,
    /// and a new piece costs ~500 ns against ~10 ns for a hit; on the 116 MB English
    /// corpus a cold 2-thread file encode ran at 1.4x one thread .
    pub(crate) fn lease_shared(&self) -> Result<Lease<'_>> {
        let mut lease = self.lease()?;
        if let Some(handle) = self.shared_handle() {
            lease.own_short = Some(std::mem::replace(&mut lease.short, handle));
        }
        Ok(lease)
    }

    /// Between two chunks of a parallel encode: if the shared table filled up, moves
    /// `lease` to its larger copy. A shared table cannot grow in place while other
    /// threads read it, so the first thread to see it full makes a copy twice the
    /// size, and each thread moves over at its next chunk; the old table is freed
    /// when the last thread has left it. It starts small, like a thread's own table,
    /// so that small inputs keep small tables.
    pub(crate) fn refresh_shared(&self, lease: &mut Lease<'_>) {
        if lease.own_short.is_some() && lease.short.wants_growth() {
            if let Some(handle) = self.shared_handle() {
                lease.short = handle;
            }
        }
    }

    /// How many pieces the shared short table holds (0 when none was made).
    #[cfg(test)]
    pub(crate) fn shared_cache_len(&self) -> usize {
        let master = self.shared_short.lock().unwrap_or_else(|p| p.into_inner());
        master.as_ref().map_or(0, ShortCache::len)
    }

    /// Before a parallel encode of `bytes` of text: makes the shared short table (or
    /// grows it) to the size such a text is likely to need ([`short_lines_for`]).
    ///
    /// Why: a shared table grows only between chunks, by copy, so one that starts
    /// small spends the first chunks full, and the pieces that find no room are merged
    /// again at each occurrence. A cold 2-thread encode of the 116 MB English corpus
    /// ran at 1.65x one thread with a table that grew from 2 MB, and at ~1.85x with one
    /// made at its full size.
    pub(crate) fn size_shared_for(&self, bytes: usize) {
        let want = short_lines_for(bytes);
        let Ok(mut master) = self.shared_short.lock() else {
            return;
        };
        // A table whose limit is below what this input needs is made again at the
        // size (a cache: its pieces are merged again once, where keeping them would
        // leave the rest of a large input merged again at every occurrence). Where
        // the memory cannot be had, the old table stays, or with none the threads
        // keep tables of their own.
        if master.as_ref().is_none_or(|t| t.max_lines() < want) {
            let max = want.max(SHORT_LINES.1);
            if let Ok(table) = ShortCache::try_new(want, max, ShortCache::spill_for(max)) {
                *master = Some(table);
            }
        }
        let Some(table) = master.as_mut() else {
            return;
        };
        // Growing by copy leaves handles that other calls hold on the old table valid.
        while table.capacity_lines() < want && table.can_grow() {
            *table = table.grown();
        }
    }

    /// Pairs of the shared short table (0 when none was made).
    #[cfg(test)]
    pub(crate) fn shared_cache_lines(&self) -> usize {
        let master = self.shared_short.lock().unwrap_or_else(|p| p.into_inner());
        master.as_ref().map_or(0, ShortCache::capacity_lines)
    }

    /// A handle on the shared short table, made (or grown, if it filled up) first.
    fn shared_handle(&self) -> Option<ShortCache> {
        let mut master = self.shared_short.lock().ok()?;
        if master.is_none() {
            let spill = ShortCache::spill_for(SHORT_LINES.1);
            *master = ShortCache::try_new(SHORT_LINES.0, SHORT_LINES.1, spill).ok();
        }
        let table = master.as_mut()?;
        if table.wants_growth() {
            *table = table.grown();
        }
        table.share()
    }
}
