//! Each function's standalone script, derived from the functions library's
//! text (docs/functions.md, "Deriving the scripts from the library"). Plain
//! `std`: build.rs uses this file too, to refuse a library it cannot read.

/// The line that starts a part of the library: `-- part: NAME`.
const PART: &str = "-- part: ";
/// A header line that gives a function's script.
const SCRIPT: &str = "-- script ";

/// Each function's script, by name, in the header's order, from the
/// library's text: a part is a line that starts with `-- part: NAME` and the
/// lines after it up to the next such line; a header line (before the first
/// part) `-- script NAME: LINE | PARTS | LINE` (and on: `| PARTS | LINE`)
/// makes NAME's script: its fields in turn, each LINE with a newline after
/// it and each PARTS the parts it names (apart by spaces), whole.
pub fn scripts_from_library(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut parts: Vec<(&str, String)> = Vec::new();
    let mut recipes: Vec<(&str, &str)> = Vec::new();
    // Each line with its newline, the last one without when the text has none.
    for line in text.split_inclusive('\n') {
        if let Some(name) = line.strip_prefix(PART) {
            parts.push((name.trim(), String::new()));
        }
        if let Some((_, part)) = parts.last_mut() {
            part.push_str(line);
        } else if let Some(recipe) = line.strip_prefix(SCRIPT) {
            let recipe = recipe.strip_suffix('\n').unwrap_or(recipe);
            let (name, recipe) = recipe.split_once(": ").unwrap_or((recipe, ""));
            recipes.push((name, recipe));
        }
    }
    let part = |name: &str| {
        parts
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p.as_str())
    };
    recipes
        .into_iter()
        .map(|(name, recipe)| {
            let fields: Vec<&str> = recipe.split(" | ").collect();
            if fields.len() < 3 || fields.len().is_multiple_of(2) {
                return Err(format!(
                    "the library's script line for {name} is not 'LINE | PARTS | LINE [| PARTS | LINE ...]': '{recipe}'"
                ));
            }
            let names = || fields.iter().skip(1).step_by(2).flat_map(|field| field.split(' '));
            let missing: Vec<&str> = names().filter(|n| part(n).is_none()).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "the library's script line for {name} names parts it lacks: {}",
                    missing.join(", ")
                ));
            }
            let mut script = String::new();
            for (i, field) in fields.iter().enumerate() {
                if i % 2 == 0 {
                    script.push_str(field);
                    script.push('\n');
                } else {
                    for n in field.split(' ') {
                        script.push_str(part(n).unwrap_or_default());
                    }
                }
            }
            Ok((name.to_string(), script))
        })
        .collect()
}
