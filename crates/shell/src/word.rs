//! Words: whether a shell word is literal (the same text whatever the
//! shell's state), and its text after quote removal.
//!
//! A word is literal only when every piece is plain text, single-quoted
//! text, double-quoted plain text or an escaped character, and no unquoted
//! piece can glob or brace-expand. ANSI-C (`$'…'`) and locale (`$"…"`)
//! quoting, tildes, parameters and substitutions are never literal. It never
//! guesses: a word brush-parser cannot split is not literal.

use brush_parser::ParserOptions;
use brush_parser::word::{WordPiece, WordPieceWithSource};

/// Characters that make unquoted text expand (globs, braces, extglob).
const EXPANDING: &[char] = &['*', '?', '[', ']', '{', '}', '(', ')', '~'];

/// One word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word as written.
    pub raw: String,
    literal: Option<String>,
    /// Whether it contains a command substitution.
    pub(super) substitutions: Vec<String>,
    pub(super) arithmetic: bool,
}

impl Word {
    pub(super) fn read(raw: &str, options: &ParserOptions) -> Word {
        let mut word = Word {
            raw: raw.to_string(),
            literal: None,
            substitutions: Vec::new(),
            arithmetic: false,
        };
        let Ok(pieces) = brush_parser::word::parse(raw, options) else {
            return word;
        };
        let mut text = String::new();
        let mut literal = true;
        for piece in &pieces {
            literal &= word.piece(&piece.piece, false, &mut text);
        }
        word.literal = literal.then_some(text);
        word
    }

    /// Append `piece`'s literal text; false when it is not literal. Records
    /// substitutions on the way.
    fn piece(&mut self, piece: &WordPiece, quoted: bool, out: &mut String) -> bool {
        match piece {
            WordPiece::Text(s) => {
                out.push_str(s);
                quoted || !s.contains(EXPANDING)
            }
            WordPiece::SingleQuotedText(s) => {
                out.push_str(s);
                true
            }
            WordPiece::EscapeSequence(s) => {
                let escaped = s.strip_prefix('\\').unwrap_or(s);
                if quoted && !escaped.starts_with(['$', '`', '"', '\\', '\n']) {
                    out.push_str(s);
                } else {
                    out.push_str(escaped);
                }
                true
            }
            WordPiece::DoubleQuotedSequence(inner) => self.sequence(inner, out),
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                self.sequence(inner, out);
                false
            }
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                self.substitutions.push(s.clone());
                false
            }
            WordPiece::ArithmeticExpression(_) => {
                self.arithmetic = true;
                false
            }
            WordPiece::AnsiCQuotedText(_)
            | WordPiece::TildeExpansion(_)
            | WordPiece::ParameterExpansion(_) => false,
        }
    }

    fn sequence(&mut self, inner: &[WordPieceWithSource], out: &mut String) -> bool {
        let mut literal = true;
        for p in inner {
            literal &= self.piece(&p.piece, true, out);
        }
        literal
    }

    /// The word's text when it is literal.
    pub fn literal(&self) -> Option<&str> {
        self.literal.as_deref()
    }

    /// The literal text, or the word as written without quote characters
    /// (for readers that look for names, never for approval).
    pub fn loose(&self) -> String {
        match &self.literal {
            Some(l) => l.clone(),
            None => self.raw.replace(['\'', '"', '\\'], ""),
        }
    }

    /// Command substitutions inside the word (their text).
    pub fn substitutions(&self) -> &[String] {
        &self.substitutions
    }
}
