//! Many input files, opened a bounded group at a time.

use super::items::MappedFile;
use super::source::Source;
use crate::error::Result;
use crate::progress::Progress;

/// Files open at once at most. Each mapped file is one of the process's memory maps,
/// and Linux allows 65,530 by default: a folder of 70,000 files, all mapped up front,
/// would leave none for the threads' stacks.
const GROUP_FILES: usize = 1024;

/// Input bytes read into memory (files that cannot be mapped) held at once at most,
/// beyond the file that passes it.
const GROUP_READ_BYTES: usize = 256 << 20;

/// Calls `work` with each group of a mapped run's `files`:
/// the group's sources, opened ([`Groups`]), and their input indices; then checks
/// that none shrank while it was read ([`check_intact`]).
pub(crate) fn each_group(
    files: Vec<MappedFile>,
    progress: &Progress,
    mut work: impl FnMut(&[Source], Vec<usize>) -> Result<()>,
) -> Result<()> {
    let mut done = 0;
    for group in Groups::new(&files, progress) {
        let sources = group?;
        let inputs = files[done..done + sources.len()]
            .iter()
            .map(|f| f.input)
            .collect();
        done += sources.len();
        work(&sources, inputs)?;
        check_intact(&sources)?;
    }
    Ok(())
}

/// An error if any of `sources` shrank while it was read ([`Source::check_intact`]);
/// called once a group's work is done, before its results are used.
pub(crate) fn check_intact(sources: &[Source]) -> Result<()> {
    sources.iter().try_for_each(Source::check_intact)
}

/// `paths` opened in order, a group at a time ([`GROUP_FILES`], [`GROUP_READ_BYTES`]):
/// work that maps files runs group after group, so the open files and the bytes read
/// into memory stay bounded however many files there are. Each group moves the
/// progress total from its files' sizes on disk to the bytes they hold (a `/proc`
/// file's).
pub(crate) struct Groups<'a> {
    files: &'a [MappedFile],
    next: usize,
    progress: &'a Progress,
}

impl<'a> Groups<'a> {
    pub(crate) fn new(files: &'a [MappedFile], progress: &'a Progress) -> Self {
        Self {
            files,
            next: 0,
            progress,
        }
    }
}

impl Iterator for Groups<'_> {
    type Item = Result<Vec<Source>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.files.len() {
            return None;
        }
        let mut group = Vec::new();
        let mut read_bytes = 0;
        while self.next < self.files.len()
            && group.len() < GROUP_FILES
            && read_bytes < GROUP_READ_BYTES
        {
            let file = &self.files[self.next];
            self.next += 1;
            let source = match Source::open_window(&file.path, file.range.clone()) {
                Ok(s) => s,
                Err(e) => return Some(Err(e)),
            };
            let held = source.read_len() as u64;
            let on_disk = match file.range {
                Some(_) => held,
                None => source.on_disk,
            };
            let total = self.progress.total();
            self.progress
                .set_total((total + held).saturating_sub(on_disk.min(total)));
            if source.is_owned() {
                read_bytes += source.bytes().len();
            }
            group.push(source);
        }
        Some(Ok(group))
    }
}
