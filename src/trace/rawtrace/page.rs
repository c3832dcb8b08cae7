//! A page of the kernel's per-CPU ring buffer, as `trace_pipe_raw` gives
//! it: a header (`events/header_page`: the page's timestamp, then the
//! commit word holding the data's length and the missed-events flags),
//! then records, each with a 4-byte header (`events/header_event`:
//! `type_len` in the low 5 bits, `time_delta` in the other 27).

/// The layout of a page header, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Where the commit word starts.
    pub commit_offset: usize,
    /// Its size (the kernel's `local_t`: 8 on 64-bit, 4 on 32-bit).
    pub commit_size: usize,
    /// Where the records start.
    pub data_offset: usize,
}

impl PageLayout {
    /// Reads `events/header_page`.
    pub fn parse(text: &str) -> Option<PageLayout> {
        let mut commit = None;
        let mut data = None;
        for line in text.lines() {
            let num = |key: &str| -> Option<usize> {
                let at = line.find(key)? + key.len();
                line[at..].split(';').next()?.trim().parse().ok()
            };
            if line.contains(" commit;") {
                commit = Some((num("offset:")?, num("size:")?));
            } else if line.contains(" data;") {
                data = num("offset:");
            }
        }
        let (commit_offset, commit_size) = commit?;
        Some(PageLayout {
            commit_offset,
            commit_size,
            data_offset: data?,
        })
    }

    /// The layout of this machine's 64-bit kernels.
    pub const X86_64: PageLayout = PageLayout {
        commit_offset: 8,
        commit_size: 8,
        data_offset: 16,
    };
}

/// The commit word's flags: events were lost before this page, and their
/// count is stored after the data.
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

const PADDING: u32 = 29;
const TIME_EXTEND: u32 = 30;
const TIME_STAMP: u32 = 31;
/// The bits of the time delta in a record header.
const TS_SHIFT: u32 = 27;

/// One data record of a page: when, and its bytes (the event's fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The trace clock's time (ns for `mono`).
    pub ts: u64,
    /// The event's bytes, `common_type` first.
    pub data: &'a [u8],
    /// Where they start in the page.
    pub at: usize,
}

/// What a page's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageHeader {
    /// The time of the page's first record.
    pub timestamp: u64,
    /// The bytes of records.
    pub len: usize,
    /// Events lost before this page (None when lost but not counted).
    pub missed: Option<u64>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// An unsigned little-endian integer of 1, 2, 4 or 8 bytes.
pub fn uint_at(b: &[u8], at: usize, size: usize) -> Option<u64> {
    let bytes = b.get(at..at.checked_add(size)?)?;
    let mut v = [0u8; 8];
    v.get_mut(..size)?.copy_from_slice(bytes);
    Some(u64::from_le_bytes(v))
}

/// Reads a page's header. None when the page is shorter than its header
/// or says it holds more than it does.
pub fn header(layout: &PageLayout, page: &[u8]) -> Option<PageHeader> {
    let timestamp = u64_at(page, 0)?;
    let commit = uint_at(page, layout.commit_offset, layout.commit_size)?;
    let flags = MISSED_EVENTS | MISSED_STORED;
    let len = (commit & !flags & 0xffff_ffff) as usize;
    let end = layout.data_offset.checked_add(len)?;
    if end > page.len() {
        return None;
    }
    let missed = if commit & MISSED_EVENTS == 0 {
        Some(0)
    } else if commit & MISSED_STORED != 0 {
        uint_at(page, end, layout.commit_size)
    } else {
        None
    };
    Some(PageHeader {
        timestamp,
        len,
        missed,
    })
}

/// The data records of a page, oldest first, each with its time. A page
/// that lies (a length past its end) ends where the lie starts.
pub fn records<'a>(layout: &PageLayout, page: &'a [u8]) -> (PageHeader, Vec<Record<'a>>) {
    let mut out = Vec::new();
    let Some(head) = header(layout, page) else {
        return (PageHeader::default(), out);
    };
    let data = &page[layout.data_offset..layout.data_offset + head.len];
    let mut ts = head.timestamp;
    let mut at = 0usize;
    while let Some(word) = u32_at(data, at) {
        let type_len = word & 0x1f;
        let delta = u64::from(word >> 5);
        let next = match type_len {
            PADDING => {
                if delta == 0 {
                    break; // The rest of the page is empty.
                }
                // A discarded event: its length follows.
                let Some(len) = u32_at(data, at + 4) else {
                    break;
                };
                (len as usize)
                    .checked_add(4)
                    .and_then(|l| at.checked_add(l))
            }
            TIME_EXTEND => {
                let Some(ext) = u32_at(data, at + 4) else {
                    break;
                };
                ts = ts.wrapping_add((u64::from(ext) << TS_SHIFT) | delta);
                at.checked_add(8)
            }
            TIME_STAMP => {
                let Some(ext) = u32_at(data, at + 4) else {
                    break;
                };
                // An absolute stamp of 59 bits; the top bits are the page's.
                let low = (u64::from(ext) << TS_SHIFT) | delta;
                ts = (ts & !((1u64 << 59) - 1)) | low;
                at.checked_add(8)
            }
            0 => {
                ts = ts.wrapping_add(delta);
                let Some(len) = u32_at(data, at + 4) else {
                    break;
                };
                let (start, len) = (at + 8, (len as usize).saturating_sub(4));
                let Some(bytes) = start.checked_add(len).and_then(|end| data.get(start..end))
                else {
                    break;
                };
                let at = layout.data_offset + start;
                out.push(Record {
                    ts,
                    data: bytes,
                    at,
                });
                start.checked_add(len.div_ceil(4) * 4)
            }
            n => {
                ts = ts.wrapping_add(delta);
                let (start, len) = (at + 4, n as usize * 4);
                let Some(bytes) = start.checked_add(len).and_then(|end| data.get(start..end))
                else {
                    break;
                };
                let at = layout.data_offset + start;
                out.push(Record {
                    ts,
                    data: bytes,
                    at,
                });
                start.checked_add(len)
            }
        };
        match next {
            Some(n) if n > at => at = n,
            _ => break,
        }
    }
    (head, out)
}
