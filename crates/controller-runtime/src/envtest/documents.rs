//! Reading YAML and JSON documents from files and directories, the way envtest reads its CRD
//! and manifest paths: a file, or a directory's `.yaml`, `.yml` and `.json` files in name order
//! (not its subdirectories); a `.json` file holds one document, any other any number of YAML
//! documents, empty ones skipped. What the documents must be is the caller's business.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// Why a document could not be parsed.
pub(crate) type ParseError = Box<dyn std::error::Error + Send + Sync>;

/// The files `path` names: itself, or the directory's YAML and JSON files in name order.
pub(crate) fn files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !std::fs::metadata(path)?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let file = entry?.path();
        let wanted = matches!(
            file.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        );
        if wanted && file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// The non-empty documents of `text` (the content of `path`), each with its number (from 1);
/// a document that does not parse fails with its number.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<(usize, Value)>, (usize, ParseError)> {
    let documents: Vec<Value> = if path.extension().is_some_and(|e| e == "json") {
        vec![serde_json::from_str(text).map_err(|e| (1, e.into()))?]
    } else {
        let mut documents = Vec::new();
        for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
            documents.push(Value::deserialize(document).map_err(|e| (i + 1, e.into()))?);
        }
        documents
    };
    Ok(documents
        .into_iter()
        .enumerate()
        // An empty document: `---` at the start or end, a comment alone.
        .filter(|(_, document)| !document.is_null())
        .map(|(i, document)| (i + 1, document))
        .collect())
}
