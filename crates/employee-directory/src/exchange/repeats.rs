//! Repeated keys in one file of millions of rows, in 8 bytes a row: each
//! checked row's key hash is appended to fixed-size chunks (a growing
//! hash set or vector would hold up to twice its rows while it grows),
//! and at the end of the file the sorted chunks are merged to find the
//! hashes seen more than once. The file is then read again for those
//! only ([`Repeated`]), so a hash shared by two different keys is no
//! duplicate.

use std::cmp::Reverse;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{Hash, Hasher};

/// Hashes per chunk: 512 KiB, so the last, part-filled chunk wastes
/// little.
const CHUNK: usize = 1 << 16;

/// The 64-bit hash of a row's key as compared.
pub fn key_hash(key: &str) -> u64 {
    let mut h = DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// The key hashes of a file's rows, in the order read.
#[derive(Default)]
pub struct RowHashes {
    chunks: Vec<Vec<u64>>,
}

impl RowHashes {
    /// Appends one row's key hash.
    pub fn push(&mut self, hash: u64) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(hash),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(hash);
                self.chunks.push(chunk);
            }
        }
    }

    /// The hashes seen more than once, at most `most` of them; the rows
    /// repeating a hash past those are only counted.
    pub fn repeated(mut self, most: usize) -> Repeated {
        for chunk in &mut self.chunks {
            chunk.sort_unstable();
        }
        let mut repeated = Repeated::default();
        let mut at = vec![0usize; self.chunks.len()];
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = self
            .chunks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.first().map(|&h| Reverse((h, i))))
            .collect();
        let mut last: Option<u64> = None;
        while let Some(Reverse((hash, i))) = heap.pop() {
            at[i] += 1;
            if let Some(&next) = self.chunks[i].get(at[i]) {
                heap.push(Reverse((next, i)));
            }
            if last != Some(hash) {
                last = Some(hash);
            } else if repeated.hashes.contains(&hash) {
                // Listed: the second reading finds its rows.
            } else if repeated.hashes.len() < most {
                repeated.hashes.insert(hash);
            } else {
                repeated.unlisted += 1;
            }
        }
        repeated
    }
}

/// What [`RowHashes::repeated`] found.
#[derive(Debug, Default)]
pub struct Repeated {
    /// Hashes of keys that more than one row may share.
    pub hashes: HashSet<u64>,
    /// Rows repeating a hash that is not in `hashes` (past the bound).
    pub unlisted: u64,
}

impl Repeated {
    /// Whether no hash was seen twice.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty() && self.unlisted == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(values: impl IntoIterator<Item = u64>) -> RowHashes {
        let mut h = RowHashes::default();
        values.into_iter().for_each(|v| h.push(v));
        h
    }

    #[test]
    fn repeats_are_found_across_chunks() {
        // 3 and 7 repeat, far apart (different chunks); 5 is alone.
        let mut values: Vec<u64> = (100..(3 * CHUNK as u64)).collect();
        values.insert(10, 3);
        values.push(7);
        values.push(5);
        values.push(3);
        values.insert(CHUNK + 1, 7);
        values.push(3);
        let found = hashes(values).repeated(10);
        assert_eq!(found.hashes, HashSet::from([3, 7]));
        assert_eq!(found.unlisted, 0);
    }

    #[test]
    fn past_the_bound_repeats_are_counted() {
        let found = hashes([1, 1, 2, 2, 2, 3, 3, 4]).repeated(1);
        assert_eq!(found.hashes, HashSet::from([1]));
        // 2 repeats twice, 3 once.
        assert_eq!(found.unlisted, 3);
    }

    #[test]
    fn no_repeat_is_empty() {
        assert!(hashes(0..1000).repeated(10).is_empty());
        assert!(RowHashes::default().repeated(10).is_empty());
    }
}
