//! Chinese word segmentation for documents and queries alike (runs of Han characters only).
//!
//! With the `chinese` feature (default) this is jieba-rs: its DAG over a dictionary plus its HMM
//! for words the dictionary lacks. The dictionary is the capability lexicon's Chinese words
//! (`lexicon/zh.tsv`), so capability words always come out whole; with the
//! `chinese-full-dictionary` feature it is jieba's own 350k-word dictionary plus those words.
//! Without the `chinese` feature, a run is cut by forward longest match over the lexicon's
//! Chinese words, one character at a time where none matches.
//!
//! Never does: anything for text without Han characters (callers check first), or translate
//! (that is the lexicon's job, on queries only).

/// Prepares the segmenter (its dictionary), so that no search pays for it.
pub fn warm() {
    for_each_han_word("创建", |_| {});
}

/// Calls `emit` with each word of a run of Han characters.
pub fn for_each_han_word(run: &str, emit: impl FnMut(&str)) {
    imp::for_each_han_word(run, emit)
}

#[cfg(feature = "chinese")]
mod imp {
    use std::sync::OnceLock;

    use jieba_rs::Jieba;

    use crate::search::lexicon::lexicon;

    fn jieba() -> &'static Jieba {
        static JIEBA: OnceLock<Jieba> = OnceLock::new();
        JIEBA.get_or_init(|| {
            #[cfg(feature = "chinese-full-dictionary")]
            let mut jieba = Jieba::new();
            #[cfg(not(feature = "chinese-full-dictionary"))]
            let mut jieba = Jieba::empty();
            let mut dictionary = String::new();
            for word in lexicon().chinese_words() {
                // One frequency for every word: the DAG then prefers fewer, longer words.
                dictionary.push_str(word);
                dictionary.push_str(" 1000\n");
            }
            // A malformed line cannot occur (the words have no spaces and the frequency is a
            // literal); a failure would only leave the dictionary short.
            let _ = jieba.load_dict(&mut dictionary.as_bytes());
            jieba
        })
    }

    pub(super) fn for_each_han_word(run: &str, mut emit: impl FnMut(&str)) {
        for token in jieba().cut(run, true) {
            if !token.word.trim().is_empty() {
                emit(token.word);
            }
        }
    }
}

#[cfg(not(feature = "chinese"))]
mod imp {
    use crate::search::lexicon::{MAX_ZH_CHARS, lexicon};

    pub(super) fn for_each_han_word(run: &str, mut emit: impl FnMut(&str)) {
        let known: std::collections::HashSet<&str> = lexicon().chinese_words().collect();
        let chars: Vec<(usize, char)> = run.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            let mut taken = 1;
            for len in (2..=MAX_ZH_CHARS.min(chars.len() - i)).rev() {
                let end = chars.get(i + len).map_or(run.len(), |&(b, _)| b);
                if known.contains(&run[chars[i].0..end]) {
                    taken = len;
                    break;
                }
            }
            let end = chars.get(i + taken).map_or(run.len(), |&(b, _)| b);
            emit(&run[chars[i].0..end]);
            i += taken;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(run: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_han_word(run, |w| out.push(w.to_string()));
        out
    }

    #[test]
    fn capability_words_come_out_whole() {
        assert_eq!(words("创建问题"), ["创建", "问题"]);
        assert_eq!(words("删除文件夹"), ["删除", "文件夹"]);
        assert_eq!(words("").len(), 0);
    }
}
