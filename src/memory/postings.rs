//! The keyword index's storage and scoring. A [`Segment`] is an inverted index of up to
//! [`BLOCK_ROWS`] chunks: each term's postings (chunk, how often in the text and in the
//! context), sorted by term, in flat arrays; a segment is also the unit stored in
//! `keyword_blocks`. A search scores only the postings of its query's terms (tens of
//! nanoseconds each, against about a microsecond for each row FTS5's bm25 scores), so its
//! cost follows how many chunks hold those words, with the ranking bm25's exactly.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::blocks::BLOCK_ROWS;
use super::terms::DocTerms;

/// bm25's term-frequency saturation and length normalisation, as FTS5 has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// An inverted index of a run of one session's chunks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Segment {
    chunk_ids: Vec<i64>,
    lengths: Vec<u16>,
    /// Sorted, distinct.
    terms: Vec<u64>,
    /// Term `i`'s postings are `starts[i]..starts[i + 1]`.
    starts: Vec<u32>,
    docs: Vec<u16>,
    freqs: Vec<[u8; 2]>,
}

impl Segment {
    /// The segment of `docs` (at most [`BLOCK_ROWS`]), each with its chunk id.
    pub(super) fn build(docs: &[(i64, DocTerms)]) -> Self {
        debug_assert!(docs.len() <= BLOCK_ROWS);
        let mut postings: Vec<(u64, u16, [u8; 2])> = Vec::new();
        for (doc, (_, terms)) in docs.iter().enumerate() {
            let doc = u16::try_from(doc).unwrap_or(u16::MAX);
            postings.extend(terms.terms.iter().map(|(t, f)| (*t, doc, *f)));
        }
        postings.sort_unstable_by_key(|(term, doc, _)| (*term, *doc));
        let mut segment = Segment {
            chunk_ids: docs.iter().map(|(id, _)| *id).collect(),
            lengths: docs.iter().map(|(_, d)| d.length).collect(),
            ..Segment::default()
        };
        for (i, (term, doc, freq)) in postings.into_iter().enumerate() {
            if segment.terms.last() != Some(&term) {
                segment.terms.push(term);
                segment.starts.push(i as u32);
            }
            segment.docs.push(doc);
            segment.freqs.push(freq);
        }
        segment.starts.push(segment.docs.len() as u32);
        segment
    }

    pub(super) fn rows(&self) -> usize {
        self.chunk_ids.len()
    }

    pub(super) fn chunk_ids(&self) -> &[i64] {
        &self.chunk_ids
    }

    /// Words in all its chunks, as bm25's average length counts them.
    pub(super) fn total_length(&self) -> u64 {
        self.lengths.iter().map(|l| u64::from(*l)).sum()
    }

    pub(super) fn bytes(&self) -> usize {
        self.chunk_ids.capacity() * 8
            + self.lengths.capacity() * 2
            + self.terms.capacity() * 8
            + self.starts.capacity() * 4
            + self.docs.capacity() * 2
            + self.freqs.capacity() * 2
    }

    fn postings(&self, term: u64) -> std::ops::Range<usize> {
        match self.terms.binary_search(&term) {
            Ok(i) => self.starts[i] as usize..self.starts[i + 1] as usize,
            Err(_) => 0..0,
        }
    }

    /// Chunks holding `term`.
    pub(super) fn count(&self, term: u64) -> usize {
        self.postings(term).len()
    }

    /// The stored form: counts, then each array in order, little-endian.
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.bytes());
        for n in [self.chunk_ids.len(), self.terms.len(), self.docs.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.chunk_ids
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.lengths
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.terms
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.starts
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.docs
            .iter()
            .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        self.freqs.iter().for_each(|v| out.extend_from_slice(v));
        out
    }

    /// A segment from its stored form, or `None` when the bytes are not one a packer
    /// writes (cut short, counts that disagree, terms out of order, a posting past the
    /// last chunk): the caller reads the chunks instead.
    pub(super) fn decode(bytes: &[u8]) -> Option<Self> {
        let mut reader = Reader(bytes);
        let rows = reader.u32()? as usize;
        let terms = reader.u32()? as usize;
        let postings = reader.u32()? as usize;
        if rows == 0 || rows > BLOCK_ROWS {
            return None;
        }
        let segment = Segment {
            chunk_ids: reader
                .array::<_, 8>(rows, |b| Some(i64::from_le_bytes(b.try_into().ok()?)))?,
            lengths: reader
                .array::<_, 2>(rows, |b| Some(u16::from_le_bytes(b.try_into().ok()?)))?,
            terms: reader.array::<_, 8>(terms, |b| Some(u64::from_le_bytes(b.try_into().ok()?)))?,
            starts: reader.array::<_, 4>(terms.checked_add(1)?, |b| {
                Some(u32::from_le_bytes(b.try_into().ok()?))
            })?,
            docs: reader
                .array::<_, 2>(postings, |b| Some(u16::from_le_bytes(b.try_into().ok()?)))?,
            freqs: reader.array::<_, 2>(postings, |b| b.try_into().ok())?,
        };
        let sound = reader.0.is_empty()
            && segment.chunk_ids.windows(2).all(|w| w[0] < w[1])
            && segment.terms.windows(2).all(|w| w[0] < w[1])
            && segment.starts.first() == Some(&0)
            && segment.starts.last().map(|s| *s as usize) == Some(postings)
            && segment.starts.windows(2).all(|w| w[0] < w[1])
            && segment.docs.iter().all(|d| (*d as usize) < rows)
            // Each term's chunks in order, none twice: a count is a number of chunks.
            && segment.starts.windows(2).all(|w| {
                segment.docs[w[0] as usize..w[1] as usize]
                    .windows(2)
                    .all(|d| d[0] < d[1])
            });
        sound.then_some(segment)
    }
}

/// Reads little-endian arrays off the front of a byte slice.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u32(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*head))
    }

    /// `count` values of `N` bytes each.
    fn array<T, const N: usize>(
        &mut self,
        count: usize,
        read: impl Fn(&[u8]) -> Option<T>,
    ) -> Option<Vec<T>> {
        let bytes = count.checked_mul(N)?;
        if bytes > self.0.len() {
            return None;
        }
        let (head, rest) = self.0.split_at(bytes);
        self.0 = rest;
        head.chunks_exact(N).map(read).collect()
    }
}

/// What bm25 needs of everything searched: how many chunks, their average length, and
/// each query term's inverse document frequency.
pub(super) struct Bm25 {
    idf: Vec<f64>,
    average_length: f64,
    context_weight: f64,
}

impl Bm25 {
    /// `holding[i]` chunks of `chunks` hold query term `i`. The idf is FTS5's, floored
    /// as FTS5 floors it (a word in more than half the chunks weighs almost nothing).
    pub(super) fn new(
        holding: &[usize],
        chunks: usize,
        total_length: u64,
        context_weight: f64,
    ) -> Self {
        let n = chunks as f64;
        let idf = holding
            .iter()
            .map(|h| {
                let h = *h as f64;
                let idf = ((n - h + 0.5) / (h + 0.5)).ln();
                // Also NaN (more holding a word than there are chunks cannot be, but
                // a ranking must not rest on it).
                if idf > 0.0 {
                    idf
                } else {
                    1e-6
                }
            })
            .collect();
        Self {
            idf,
            average_length: if chunks == 0 {
                1.0
            } else {
                (total_length as f64 / n).max(f64::MIN_POSITIVE)
            },
            context_weight,
        }
    }

    /// Term `i`'s part of a chunk's score.
    fn part(&self, i: usize, freq: [u8; 2], length: u16) -> f64 {
        let f = f64::from(freq[0]) + self.context_weight * f64::from(freq[1]);
        let norm = K1 * (1.0 - B + B * f64::from(length) / self.average_length);
        self.idf[i] * f * (K1 + 1.0) / (f + norm)
    }
}

/// A scored chunk, ordered so that a max-heap's top is the worst kept.
#[derive(PartialEq)]
struct Kept(f64, i64);

impl Eq for Kept {}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        // Worse is greater: a lower score, then (at a tie) an older chunk.
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

/// The best `k` chunks seen so far (of those it is limited to, when it is).
pub(super) struct TopK {
    k: usize,
    heap: BinaryHeap<Kept>,
    among: Option<std::sync::Arc<std::collections::HashSet<i64>>>,
}

impl TopK {
    pub(super) fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
            among: None,
        }
    }

    /// The best `k` of the chunks `among` only.
    pub(super) fn among(k: usize, among: std::sync::Arc<std::collections::HashSet<i64>>) -> Self {
        Self {
            among: Some(among),
            ..Self::new(k)
        }
    }

    fn offer(&mut self, score: f64, chunk_id: i64) {
        if self.k == 0 || self.among.as_ref().is_some_and(|a| !a.contains(&chunk_id)) {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(Kept(score, chunk_id));
        } else if let Some(worst) = self.heap.peek() {
            if Kept(score, chunk_id) < *worst {
                self.heap.pop();
                self.heap.push(Kept(score, chunk_id));
            }
        }
    }

    /// Best first.
    pub(super) fn into_sorted(self) -> Vec<(i64, f64)> {
        let mut kept: Vec<Kept> = self.heap.into_vec();
        kept.sort();
        kept.into_iter().map(|Kept(s, id)| (id, s)).collect()
    }
}

/// Scores every chunk of `segment` holding one of `terms` and offers it to `top`.
/// `scratch` is a per-search buffer of [`BLOCK_ROWS`] scores, left zeroed.
pub(super) fn score_segment(
    segment: &Segment,
    terms: &[u64],
    bm25: &Bm25,
    scratch: &mut [f64],
    top: &mut TopK,
) {
    let mut touched: Vec<u16> = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        for p in segment.postings(*term) {
            let doc = segment.docs[p];
            let slot = &mut scratch[doc as usize];
            if *slot == 0.0 {
                touched.push(doc);
            }
            *slot += bm25
                .part(i, segment.freqs[p], segment.lengths[doc as usize])
                .max(1e-12);
        }
    }
    for doc in touched {
        let slot = &mut scratch[doc as usize];
        top.offer(*slot, segment.chunk_ids[doc as usize]);
        *slot = 0.0;
    }
}

/// Scores one chunk not in a segment (the session's newest, fewer than a block).
pub(super) fn score_doc(chunk_id: i64, doc: &DocTerms, terms: &[u64], bm25: &Bm25, top: &mut TopK) {
    let mut score = 0.0;
    let mut held = false;
    for (i, term) in terms.iter().enumerate() {
        if let Ok(j) = doc.terms.binary_search_by_key(term, |(t, _)| *t) {
            score += bm25.part(i, doc.terms[j].1, doc.length).max(1e-12);
            held = true;
        }
    }
    if held {
        top.offer(score, chunk_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::terms::{Field, Terms};
    use proptest::prelude::*;

    fn docs(texts: &[&str]) -> Vec<(i64, DocTerms)> {
        let mut terms = Terms::default();
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i64 + 1, terms.doc(t, "", Field::Words)))
            .collect()
    }

    #[test]
    fn a_segment_scores_as_its_chunks_scored_one_by_one() {
        let docs = docs(&[
            "tea and biscuits",
            "green tea, more tea",
            "coffee only",
            "biscuits for the trip",
        ]);
        let segment = Segment::build(&docs);
        let (_, query) = Terms::default().query("tea biscuits").unwrap();
        let holding: Vec<usize> = query.iter().map(|t| segment.count(*t)).collect();
        assert_eq!(holding, vec![2, 2]);
        let bm25 = Bm25::new(&holding, 4, segment.total_length(), 0.3);
        let mut scratch = vec![0.0; BLOCK_ROWS];
        let mut top = TopK::new(10);
        score_segment(&segment, &query, &bm25, &mut scratch, &mut top);
        let mut each = TopK::new(10);
        for (id, doc) in &docs {
            score_doc(*id, doc, &query, &bm25, &mut each);
        }
        let (a, b) = (top.into_sorted(), each.into_sorted());
        assert_eq!(a, b);
        assert_eq!(a.len(), 3, "coffee holds neither word");
        assert_eq!(a[0].0, 1, "both words beat one word twice");
        assert!(scratch.iter().all(|s| *s == 0.0), "scratch left zeroed");
        assert_eq!(Segment::decode(&segment.encode()), Some(segment));
    }

    #[test]
    fn top_k_keeps_the_best_and_breaks_ties_by_the_newer_chunk() {
        let mut top = TopK::new(2);
        for (score, id) in [(1.0, 1), (3.0, 2), (2.0, 3), (2.0, 4), (0.5, 5)] {
            top.offer(score, id);
        }
        assert_eq!(top.into_sorted(), vec![(2, 3.0), (4, 2.0)]);
        let mut none = TopK::new(0);
        none.offer(1.0, 1);
        assert!(none.into_sorted().is_empty());
    }

    proptest! {
        /// Any bytes decode to a sound segment or to nothing, never a panic; a segment's
        /// stored form cut anywhere or with any byte changed is refused or still sound.
        #[test]
        fn any_bytes_decode_to_a_sound_segment_or_none(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
            cut in any::<usize>(),
            flip in any::<(usize, u8)>(),
        ) {
            let check = |s: &Segment| {
                let postings = s.docs.len();
                s.starts.windows(2).all(|w| w[0] < w[1])
                    && s.starts.last().map(|l| *l as usize) == Some(postings)
                    && s.docs.iter().all(|d| (*d as usize) < s.rows())
            };
            if let Some(s) = Segment::decode(&bytes) {
                prop_assert!(check(&s));
            }
            let stored = Segment::build(&docs(&["one two three", "two three", "three"])).encode();
            let cut = cut % (stored.len() + 1);
            if cut < stored.len() {
                prop_assert!(Segment::decode(&stored[..cut]).is_none());
            }
            let mut changed = stored.clone();
            let at = flip.0 % changed.len();
            changed[at] ^= flip.1;
            if let Some(s) = Segment::decode(&changed) {
                prop_assert!(check(&s));
                let (_, query) = Terms::default().query("one two three").unwrap();
                let holding: Vec<usize> = query.iter().map(|t| s.count(*t)).collect();
                let bm25 = Bm25::new(&holding, s.rows(), s.total_length(), 0.3);
                let mut scratch = vec![0.0; BLOCK_ROWS];
                score_segment(&s, &query, &bm25, &mut scratch, &mut TopK::new(5));
            }
        }
    }
}
