//! `translate`: phrase-table translation between six European languages, stop-word language
//! detection, Cyrillic/Greek transliteration and a user glossary that overrides the table.
//! The table is small (everyday phrases and UI words); words it does not know are kept as they
//! are and listed in `unknown_words`, so a caller can tell a partial translation from a full one.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::kit::{Args, Reply, fail, ok, ok_text, round_to};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "translate_text" => translate_text,
        "detect_language" => detect_language,
        "list_languages" => list_languages,
        "translate_batch" => translate_batch,
        "transliterate" => transliterate,
        "add_glossary_term" => add_glossary_term,
        "list_glossary" => list_glossary,
        _ => return None,
    })
}

const LANGS: [&str; 6] = ["en", "es", "fr", "de", "it", "pt"];

/// English, Spanish, French, German, Italian, Portuguese.
const TABLE: [[&str; 6]; 44] = [
    [
        "good morning",
        "buenos días",
        "bonjour",
        "guten Morgen",
        "buongiorno",
        "bom dia",
    ],
    [
        "good evening",
        "buenas tardes",
        "bonsoir",
        "guten Abend",
        "buonasera",
        "boa tarde",
    ],
    [
        "good night",
        "buenas noches",
        "bonne nuit",
        "gute Nacht",
        "buonanotte",
        "boa noite",
    ],
    [
        "thank you",
        "gracias",
        "merci",
        "danke",
        "grazie",
        "obrigado",
    ],
    [
        "how are you",
        "cómo estás",
        "comment ça va",
        "wie geht es dir",
        "come stai",
        "como está",
    ],
    [
        "where is",
        "dónde está",
        "où est",
        "wo ist",
        "dov'è",
        "onde está",
    ],
    [
        "see you tomorrow",
        "hasta mañana",
        "à demain",
        "bis morgen",
        "a domani",
        "até amanhã",
    ],
    ["hello", "hola", "bonjour", "hallo", "ciao", "olá"],
    [
        "goodbye",
        "adiós",
        "au revoir",
        "auf Wiedersehen",
        "arrivederci",
        "adeus",
    ],
    [
        "please",
        "por favor",
        "s'il vous plaît",
        "bitte",
        "per favore",
        "por favor",
    ],
    ["thanks", "gracias", "merci", "danke", "grazie", "obrigado"],
    ["yes", "sí", "oui", "ja", "sì", "sim"],
    ["no", "no", "non", "nein", "no", "não"],
    ["the", "el", "le", "der", "il", "o"],
    ["and", "y", "et", "und", "e", "e"],
    ["is", "es", "est", "ist", "è", "é"],
    [
        "station",
        "estación",
        "gare",
        "Bahnhof",
        "stazione",
        "estação",
    ],
    ["train", "tren", "train", "Zug", "treno", "comboio"],
    ["water", "agua", "eau", "Wasser", "acqua", "água"],
    ["coffee", "café", "café", "Kaffee", "caffè", "café"],
    ["milk", "leche", "lait", "Milch", "latte", "leite"],
    ["bread", "pan", "pain", "Brot", "pane", "pão"],
    ["cheese", "queso", "fromage", "Käse", "formaggio", "queijo"],
    ["friend", "amigo", "ami", "Freund", "amico", "amigo"],
    [
        "meeting",
        "reunión",
        "réunion",
        "Besprechung",
        "riunione",
        "reunião",
    ],
    ["tomorrow", "mañana", "demain", "morgen", "domani", "amanhã"],
    ["today", "hoy", "aujourd'hui", "heute", "oggi", "hoje"],
    ["city", "ciudad", "ville", "Stadt", "città", "cidade"],
    ["beautiful", "hermoso", "beau", "schön", "bello", "bonito"],
    [
        "welcome",
        "bienvenido",
        "bienvenue",
        "willkommen",
        "benvenuto",
        "bem-vindo",
    ],
    [
        "dashboard",
        "panel",
        "tableau de bord",
        "Dashboard",
        "cruscotto",
        "painel",
    ],
    [
        "settings",
        "ajustes",
        "paramètres",
        "Einstellungen",
        "impostazioni",
        "configurações",
    ],
    [
        "save",
        "guardar",
        "enregistrer",
        "speichern",
        "salva",
        "salvar",
    ],
    [
        "cancel",
        "cancelar",
        "annuler",
        "abbrechen",
        "annulla",
        "cancelar",
    ],
    [
        "search",
        "buscar",
        "rechercher",
        "suchen",
        "cerca",
        "pesquisar",
    ],
    ["open", "abrir", "ouvrir", "öffnen", "apri", "abrir"],
    ["close", "cerrar", "fermer", "schließen", "chiudi", "fechar"],
    ["file", "archivo", "fichier", "Datei", "file", "arquivo"],
    ["help", "ayuda", "aide", "Hilfe", "aiuto", "ajuda"],
    [
        "sign in",
        "iniciar sesión",
        "se connecter",
        "anmelden",
        "accedi",
        "entrar",
    ],
    [
        "i love",
        "me encanta",
        "j'adore",
        "ich liebe",
        "amo",
        "eu amo",
    ],
    ["you", "tú", "vous", "du", "tu", "você"],
    ["morning", "mañana", "matin", "Morgen", "mattina", "manhã"],
    ["night", "noche", "nuit", "Nacht", "notte", "noite"],
];

/// Function words per language for detection.
const STOP_WORDS: [(&str, &[&str]); 6] = [
    (
        "en",
        &[
            "the", "is", "and", "you", "where", "of", "to", "please", "thank", "good", "are",
            "what",
        ],
    ),
    (
        "es",
        &[
            "el", "la", "de", "que", "y", "es", "por", "favor", "dónde", "está", "gracias",
            "buenos", "hola",
        ],
    ),
    (
        "fr",
        &[
            "le", "la", "les", "est", "où", "et", "vous", "s'il", "plaît", "merci", "bonjour",
            "je", "une",
        ],
    ),
    (
        "de",
        &[
            "der", "die", "das", "und", "ist", "wo", "bitte", "nicht", "danke", "ich", "guten",
            "ein",
        ],
    ),
    (
        "it",
        &[
            "il",
            "la",
            "è",
            "dove",
            "per",
            "favore",
            "grazie",
            "non",
            "che",
            "buongiorno",
            "sono",
        ],
    ),
    (
        "pt",
        &[
            "o", "a", "é", "onde", "obrigado", "por", "favor", "não", "bom", "dia", "você", "está",
        ],
    ),
];

fn lang_index(code: &str) -> Result<usize, ToolError> {
    LANGS.iter().position(|l| *l == code).ok_or_else(|| {
        fail(format!(
            "unsupported language {code:?}; use en, es, fr, de, it or pt"
        ))
    })
}

/// Glossary: (term lowercased, language) → translation.
#[derive(Debug, Default)]
pub(crate) struct Glossary {
    terms: BTreeMap<(String, String), String>,
}

impl Glossary {
    pub(crate) fn seeded() -> Glossary {
        let mut terms = BTreeMap::new();
        terms.insert(
            ("workspace".to_string(), "de".to_string()),
            "Arbeitsbereich".to_string(),
        );
        Glossary { terms }
    }
}

fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '-' {
            current.push(c);
        } else {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn detect(text: &str) -> (String, f64, Vec<(String, f64)>) {
    let tokens: Vec<String> = split_words(&text.to_lowercase())
        .into_iter()
        .filter(|t| t.chars().any(char::is_alphabetic))
        .collect();
    let mut scores: Vec<(String, f64)> = STOP_WORDS
        .iter()
        .enumerate()
        .map(|(i, (code, stops))| {
            let mut score = tokens
                .iter()
                .filter(|t| stops.contains(&t.as_str()))
                .count() as f64;
            // Dictionary phrases count too, longer ones more.
            let lower = format!(" {} ", tokens.join(" "));
            for row in TABLE.iter() {
                if lower.contains(&format!(" {} ", row[i].to_lowercase())) {
                    score += 0.5 * row[i].split_whitespace().count() as f64;
                }
            }
            (code.to_string(), score)
        })
        .filter(|(_, s)| *s > 0.0)
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: f64 = scores.iter().map(|(_, s)| s).sum();
    let candidates: Vec<(String, f64)> = scores
        .iter()
        .map(|(c, s)| (c.clone(), round_to(s / total, 3)))
        .collect();
    match candidates.first() {
        Some((code, confidence)) => (code.clone(), *confidence, candidates),
        None => ("und".to_string(), 0.0, Vec::new()),
    }
}

/// Translates with phrases of up to four words; returns the text and the unknown words.
fn translate(text: &str, from: usize, to: usize, glossary: &Glossary) -> (String, Vec<String>) {
    let tokens = split_words(text);
    let mut out: Vec<String> = Vec::new();
    let mut unknown = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if !tokens[i].chars().any(char::is_alphanumeric) {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let mut matched = false;
        for len in (1..=4).rev() {
            if i + len > tokens.len() {
                continue;
            }
            let phrase = tokens[i..i + len].join(" ").to_lowercase();
            if let Some(term) = glossary.terms.get(&(phrase.clone(), LANGS[to].to_string())) {
                out.push(term.clone());
                i += len;
                matched = true;
                break;
            }
            if let Some(row) = TABLE.iter().find(|row| row[from].to_lowercase() == phrase) {
                let mut word = row[to].to_string();
                // Keep a leading capital from the source.
                if tokens[i].chars().next().is_some_and(char::is_uppercase) {
                    let mut chars = word.chars();
                    if let Some(first) = chars.next() {
                        word = first.to_uppercase().chain(chars).collect();
                    }
                }
                out.push(word);
                i += len;
                matched = true;
                break;
            }
        }
        if !matched {
            if from != to && !tokens[i].chars().all(|c| c.is_ascii_digit()) {
                unknown.push(tokens[i].clone());
            }
            out.push(tokens[i].clone());
            i += 1;
        }
    }
    let mut text = String::new();
    for token in out {
        // Closing punctuation hugs the previous word; opening ¿ and ¡ hug the next one.
        let closing = token.chars().count() == 1
            && !token.chars().any(char::is_alphanumeric)
            && token != "¿"
            && token != "¡";
        if !text.is_empty() && !closing && !text.ends_with(['¿', '¡']) {
            text.push(' ');
        }
        text.push_str(&token);
    }
    (text, unknown)
}

fn translate_text(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    if text.trim().is_empty() {
        return Err(fail("text must not be empty"));
    }
    let target = lang_index(args.str("target_language")?)?;
    let source = match args.opt_str("source_language")? {
        Some(code) => lang_index(code)?,
        None => match detect(text).0.as_str() {
            "und" => 0,
            code => lang_index(code)?,
        },
    };
    let glossary = lock(&world.translate);
    let (translation, unknown) = translate(text, source, target, &glossary);
    ok_text(
        json!({"translation": translation, "source_language": LANGS[source], "target_language": LANGS[target], "unknown_words": unknown}),
        translation.clone(),
    )
}

fn detect_language(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (language, confidence, candidates) = detect(args.str("text")?);
    let candidates: Vec<Value> = candidates
        .into_iter()
        .map(|(l, s)| json!({"language": l, "score": s}))
        .collect();
    ok(json!({"language": language, "confidence": confidence, "candidates": candidates}))
}

fn list_languages(_world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let names = [
        ("en", "English", "English"),
        ("es", "Spanish", "Español"),
        ("fr", "French", "Français"),
        ("de", "German", "Deutsch"),
        ("it", "Italian", "Italiano"),
        ("pt", "Portuguese", "Português"),
    ];
    ok(
        json!({"languages": names.iter().map(|(c, n, native)| json!({"code": c, "name": n, "native_name": native})).collect::<Vec<_>>(), "phrases": TABLE.len()}),
    )
}

fn translate_batch(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let texts = args.str_list("texts")?;
    if texts.is_empty() || texts.len() > 100 {
        return Err(fail("texts must hold 1 to 100 strings"));
    }
    let target = lang_index(args.str("target_language")?)?;
    let glossary = lock(&world.translate);
    let items: Vec<Value> = texts
        .iter()
        .map(|t| {
            let source = lang_index(&detect(t).0).unwrap_or(0);
            let (translation, unknown) = translate(t, source, target, &glossary);
            json!({"source": t, "translation": translation, "complete": unknown.is_empty()})
        })
        .collect();
    ok(json!({"target_language": LANGS[target], "items": items}))
}

fn transliterate(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    let mut out = String::new();
    let mut script = "latin";
    for c in text.chars() {
        let lower = c.to_lowercase().next().unwrap_or(c);
        let mapped = match lower {
            'а' => "a",
            'б' => "b",
            'в' => "v",
            'г' => "g",
            'д' => "d",
            'е' => "e",
            'ё' => "yo",
            'ж' => "zh",
            'з' => "z",
            'и' => "i",
            'й' => "y",
            'к' => "k",
            'л' => "l",
            'м' => "m",
            'н' => "n",
            'о' => "o",
            'п' => "p",
            'р' => "r",
            'с' => "s",
            'т' => "t",
            'у' => "u",
            'ф' => "f",
            'х' => "kh",
            'ц' => "ts",
            'ч' => "ch",
            'ш' => "sh",
            'щ' => "shch",
            'ъ' => "",
            'ы' => "y",
            'ь' => "",
            'э' => "e",
            'ю' => "yu",
            'я' => "ya",
            'α' => "a",
            'β' => "v",
            'γ' => "g",
            'δ' => "d",
            'ε' => "e",
            'ζ' => "z",
            'η' => "i",
            'θ' => "th",
            'ι' => "i",
            'κ' => "k",
            'λ' => "l",
            'μ' => "m",
            'ν' => "n",
            'ξ' => "x",
            'ο' => "o",
            'π' => "p",
            'ρ' => "r",
            'σ' | 'ς' => "s",
            'τ' => "t",
            'υ' => "y",
            'φ' => "f",
            'χ' => "ch",
            'ψ' => "ps",
            'ω' => "o",
            'ά' => "a",
            'έ' => "e",
            'ή' => "i",
            'ί' => "i",
            'ό' => "o",
            'ύ' => "y",
            'ώ' => "o",
            _ => {
                out.push(c);
                continue;
            }
        };
        script = if ('\u{0370}'..='\u{03FF}').contains(&lower)
            || ('\u{1F00}'..='\u{1FFF}').contains(&lower)
        {
            "greek"
        } else {
            "cyrillic"
        };
        if c.is_uppercase() {
            let mut chars = mapped.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push_str(mapped);
        }
    }
    if script == "latin" {
        return Err(fail(
            "the text has no Cyrillic or Greek letters to transliterate",
        ));
    }
    ok_text(json!({"latin": out, "script": script}), out.clone())
}

fn add_glossary_term(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let term = args.str("term")?.trim().to_lowercase();
    let lang = LANGS[lang_index(args.str("target_language")?)?];
    let translation = args.str("translation")?.trim();
    if term.is_empty() || translation.is_empty() {
        return Err(fail("term and translation must not be empty"));
    }
    let mut glossary = lock(&world.translate);
    let previous = glossary
        .terms
        .insert((term.clone(), lang.to_string()), translation.to_string());
    ok(
        json!({"entry": {"term": term, "language": lang, "translation": translation}, "replaced": previous, "glossary_size": glossary.terms.len()}),
    )
}

fn list_glossary(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let only = args.opt_str("target_language")?;
    let glossary = lock(&world.translate);
    let entries: Vec<Value> = glossary
        .terms
        .iter()
        .filter(|((_, l), _)| only.is_none_or(|o| o == l))
        .map(|((term, lang), translation)| json!({"term": term, "language": lang, "translation": translation}))
        .collect();
    ok(json!({ "entries": entries }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_and_detects() {
        let g = Glossary::default();
        assert_eq!(
            translate("good morning, thank you", 0, 1, &g),
            ("buenos días, gracias".to_string(), vec![])
        );
        assert_eq!(detect("Où est la gare, s'il vous plaît ?").0, "fr");
    }
}
