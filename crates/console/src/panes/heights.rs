//! Per-entry line heights of a long wrapped list at one width, computed
//! lazily: an entry's exact height is known once it has been rendered;
//! until then a cheap estimate from its text stands in. The running total
//! (for scrolling and the "↓ N more" count) is kept as heights change, so a
//! frame never wraps entries it does not show.
//!
//! It only does arithmetic; the owning pane renders and says which heights
//! are exact.

/// The estimated height of a text wrapped at `width` columns: one line per
/// `width` bytes of each text line (at least one), plus the separator line.
pub fn estimate(text: &str, separator: bool, width: usize) -> usize {
    let width = width.max(1);
    let body: usize = text
        .split('\n')
        .map(|l| l.len().div_ceil(width).max(1))
        .sum();
    body + usize::from(separator)
}

#[derive(Debug, Default)]
pub struct Heights {
    width: usize,
    /// Exact height once known, else the estimate.
    heights: Vec<usize>,
    exact: Vec<bool>,
    total: usize,
}

impl Heights {
    /// Bring the list to `len` entries at `width`: a new width forgets every
    /// height; new entries start with their estimate `est(i)`.
    pub fn sync(&mut self, width: usize, len: usize, est: impl Fn(usize) -> usize) {
        if width != self.width {
            self.width = width;
            self.truncate(0);
        }
        self.truncate(len);
        for i in self.heights.len()..len {
            let h = est(i);
            self.heights.push(h);
            self.exact.push(false);
            self.total += h;
        }
    }

    /// Forget entries from `i` on (they changed); `sync` estimates them again.
    pub fn truncate(&mut self, i: usize) {
        if i < self.heights.len() {
            self.total -= self.heights[i..].iter().sum::<usize>();
            self.heights.truncate(i);
            self.exact.truncate(i);
        }
    }

    /// The first `n` entries were dropped; the new first entry loses its
    /// separator line.
    pub fn drop_front(&mut self, n: usize) {
        if n >= self.heights.len() {
            self.truncate(0);
            return;
        }
        self.total -= self.heights.drain(..n).sum::<usize>();
        self.exact.drain(..n);
        if let Some(first) = self.heights.first_mut()
            && *first > 0
        {
            *first -= 1;
            self.total -= 1;
        }
    }

    pub fn get(&self, i: usize) -> usize {
        self.heights.get(i).copied().unwrap_or(0)
    }

    pub fn is_exact(&self, i: usize) -> bool {
        self.exact.get(i).copied().unwrap_or(false)
    }

    /// Record entry `i`'s exact height.
    pub fn set_exact(&mut self, i: usize, h: usize) {
        if let Some(old) = self.heights.get_mut(i) {
            self.total = self.total - *old + h;
            *old = h;
            self.exact[i] = true;
        }
    }

    /// Sum of all heights (exact or estimated).
    pub fn total(&self) -> usize {
        self.total
    }

    /// How many heights are exact (tests: a frame computes few).
    pub fn exact_count(&self) -> usize {
        self.exact.iter().filter(|e| **e).count()
    }

    /// The entry holding line `line` and the line its first row is at (the
    /// entry count and the total when `line` is past the end).
    pub fn locate(&self, line: usize) -> (usize, usize) {
        let mut start = 0;
        for (i, h) in self.heights.iter().enumerate() {
            if start + h > line {
                return (i, start);
            }
            start += h;
        }
        (self.heights.len(), start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_follow_exact_heights_truncation_and_drops() {
        let mut h = Heights::default();
        h.sync(10, 4, |_| 3);
        assert_eq!(h.total(), 12);
        h.set_exact(1, 5);
        assert_eq!((h.total(), h.get(1), h.is_exact(1)), (14, 5, true));
        assert_eq!(h.locate(0), (0, 0));
        assert_eq!(h.locate(3), (1, 3));
        assert_eq!(h.locate(8), (2, 8));
        assert_eq!(h.locate(99), (4, 14));
        h.truncate(2);
        assert_eq!(h.total(), 8);
        h.sync(10, 3, |_| 2);
        assert_eq!(h.total(), 10);
        h.drop_front(1);
        assert_eq!(
            h.total(),
            6,
            "dropped 3, and the new first lost its separator"
        );
        h.sync(20, 2, |_| 1);
        assert_eq!((h.total(), h.exact_count()), (2, 0), "a new width forgets");
    }

    #[test]
    fn estimates_count_wrapped_rows_and_the_separator() {
        assert_eq!(estimate("", false, 10), 1);
        assert_eq!(estimate("abc", true, 10), 2);
        assert_eq!(estimate(&"x".repeat(25), false, 10), 3);
        assert_eq!(estimate("a\n\nb", false, 10), 3);
    }
}
