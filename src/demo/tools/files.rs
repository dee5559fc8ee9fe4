//! `files`: a cloud drive (separate from the core workspace) with folders, sharing, stars,
//! versions and a trash. Paths are absolute (`/Documents/q1-report.md`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::super::clock::{DEMO_NOW, format_utc};
use super::super::kit::{Args, Kind, Reply, fail, listed, matches_all, not_found, ok};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "list_files" => list_files,
        "read_file" => read_file,
        "create_file" => create_file,
        "append_to_file" => append_to_file,
        "rename_file" => rename_file,
        "move_file" => move_file,
        "copy_file" => copy_file,
        "delete_file" => delete_file,
        "restore_file" => restore_file,
        "list_trash" => list_trash,
        "search_files" => search_files,
        "get_file_info" => get_file_info,
        "share_file" => share_file,
        "list_shared_files" => list_shared_files,
        "star_file" => star_file,
        "list_starred_files" => list_starred_files,
        "create_folder" => create_folder,
        "get_storage_usage" => get_storage_usage,
        "list_file_versions" => list_file_versions,
        "compress_files" => compress_files,
        _ => return None,
    })
}

const QUOTA: u64 = 15 * 1024 * 1024 * 1024;

#[derive(Debug, Clone)]
struct DriveFile {
    content: String,
    /// Binary files have no text; their size is recorded instead.
    binary_size: Option<u64>,
    modified: i64,
    starred: bool,
    shared_with: Vec<(String, String)>,
    /// Earlier versions: (saved at, size).
    versions: Vec<(i64, u64)>,
}

impl DriveFile {
    fn text(content: &str, modified: i64) -> DriveFile {
        DriveFile {
            content: content.to_string(),
            binary_size: None,
            modified,
            starred: false,
            shared_with: Vec::new(),
            versions: Vec::new(),
        }
    }

    fn size(&self) -> u64 {
        self.binary_size.unwrap_or(self.content.len() as u64)
    }

    fn to_json(&self, path: &str) -> Value {
        json!({
            "path": path,
            "size_bytes": self.size(),
            "modified": format_utc(self.modified),
            "starred": self.starred,
            "shared_with": self.shared_with.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
        })
    }

    fn save_version(&mut self) {
        self.versions.push((self.modified, self.size()));
        self.modified = DEMO_NOW;
    }
}

/// The drive.
#[derive(Debug)]
pub(crate) struct Drive {
    files: BTreeMap<String, DriveFile>,
    folders: BTreeSet<String>,
    trash: BTreeMap<String, DriveFile>,
}

impl Drive {
    pub(crate) fn seeded() -> Drive {
        let day = 86_400;
        let mut files = BTreeMap::new();
        let mut report = DriveFile::text(
            "# Q1 report\n\nRevenue grew 12% quarter over quarter.\nChurn fell to 2.1%.\n\n## Next steps\n- Hire two engineers\n- Launch search v2\n",
            DEMO_NOW - 2 * day,
        );
        report.versions = vec![(DEMO_NOW - 9 * day, 61), (DEMO_NOW - 5 * day, 98)];
        report.starred = true;
        files.insert("/Documents/q1-report.md".to_string(), report);
        files.insert(
            "/Documents/budget-2026.csv".to_string(),
            DriveFile::text(
                "team,q1,q2\nengineering,420000,450000\nmarketing,150000,160000\n",
                DEMO_NOW - 12 * day,
            ),
        );
        let mut roadmap = DriveFile::text(
            "# Roadmap 2026\n\n- Q1: search v2\n- Q2: mobile app\n- Q3: public API\n",
            DEMO_NOW - 4 * day,
        );
        roadmap.shared_with = vec![
            ("dana@acme.example".to_string(), "editor".to_string()),
            ("lee@acme.example".to_string(), "viewer".to_string()),
        ];
        files.insert("/Shared/roadmap.md".to_string(), roadmap);
        let mut photo = DriveFile::text("", DEMO_NOW - 30 * day);
        photo.binary_size = Some(2_304_000);
        files.insert("/Photos/offsite-2025.jpg".to_string(), photo);
        let mut trash = BTreeMap::new();
        trash.insert(
            "/Documents/old-plan.md".to_string(),
            DriveFile::text(
                "# Old plan\n\nSuperseded by the roadmap.\n",
                DEMO_NOW - 40 * day,
            ),
        );
        Drive {
            files,
            folders: ["/", "/Documents", "/Shared", "/Photos"]
                .into_iter()
                .map(str::to_string)
                .collect(),
            trash,
        }
    }

    fn file(&self, path: &str) -> Result<&DriveFile, ToolError> {
        FILE.get(&self.files, path)
    }

    fn file_mut(&mut self, path: &str) -> Result<&mut DriveFile, ToolError> {
        FILE.get_mut(&mut self.files, path)
    }

    /// `{"files": [...]}`: the files `keep` passes, as `render` shows them, by path.
    fn files_where(
        &self,
        keep: impl Fn(&DriveFile) -> bool,
        render: impl Fn(&String, &DriveFile) -> Value,
    ) -> Value {
        let files: Vec<Value> = self
            .files
            .iter()
            .filter(|(_, f)| keep(f))
            .map(|(p, f)| render(p, f))
            .collect();
        json!({ "files": files })
    }

    /// Puts `file` at `path`, creating the folders above it.
    fn put(&mut self, path: String, file: DriveFile) {
        self.ensure_folder(&parent(&path));
        self.files.insert(path, file);
    }

    fn ensure_folder(&mut self, path: &str) {
        let mut current = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            current.push('/');
            current.push_str(part);
            self.folders.insert(current.clone());
        }
    }
}

const FILE: Kind = Kind::new("file", "list a folder with list_files or use search_files");
/// A file to move or delete: the hint leaves out search.
const LISTED_FILE: Kind = Kind::new("file", "list a folder with list_files");

fn clean_path(raw: &str) -> Result<String, ToolError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.split('/').any(|p| p == "..") || trimmed.len() > 1024 {
        return Err(fail(format!(
            "invalid drive path {raw:?}; use an absolute path like /Documents/notes.md"
        )));
    }
    let mut path = if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    };
    while path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    Ok(path)
}

fn parent(path: &str) -> String {
    match path.rsplit_once('/') {
        Some(("", _)) | None => "/".to_string(),
        Some((p, _)) => p.to_string(),
    }
}

fn list_files(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let folder = clean_path(args.str_or("folder", "/Documents")?)?;
    let recursive = args.bool_or("recursive", false)?;
    let drive = lock(&world.drive);
    if !drive.folders.contains(&folder) {
        return Err(not_found(
            "folder",
            &folder,
            "folders: / /Documents /Shared /Photos (create more with create_folder)",
        ));
    }
    let prefix = if folder == "/" {
        "/".to_string()
    } else {
        format!("{folder}/")
    };
    let mut entries = Vec::new();
    for sub in drive
        .folders
        .iter()
        .filter(|f| f.starts_with(&prefix) && **f != folder)
    {
        if recursive || !sub[prefix.len()..].contains('/') {
            entries.push(json!({"path": sub, "kind": "folder", "size_bytes": 0}));
        }
    }
    for (path, file) in drive.files.iter().filter(|(p, _)| p.starts_with(&prefix)) {
        if recursive || !path[prefix.len()..].contains('/') {
            entries.push(json!({"path": path, "kind": "file", "size_bytes": file.size()}));
        }
    }
    ok(json!({"folder": folder, "entries": entries}))
}

fn read_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let drive = lock(&world.drive);
    let file = drive.file(&path)?;
    if file.binary_size.is_some() {
        return Err(fail(format!(
            "{path} is a binary file ({} bytes) and has no text content",
            file.size()
        )));
    }
    ok(json!({"path": path, "content": file.content, "size_bytes": file.size()}))
}

fn create_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let content = args.str_or("content", "")?;
    let mut drive = lock(&world.drive);
    if drive.files.contains_key(&path) || drive.folders.contains(&path) {
        return Err(fail(format!(
            "{path} already exists; use append_to_file or pick another name"
        )));
    }
    let file = DriveFile::text(content, DEMO_NOW);
    let details = json!({"file": file.to_json(&path)});
    drive.put(path, file);
    ok(details)
}

fn append_to_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let text = args.str("content")?;
    let mut drive = lock(&world.drive);
    let file = drive.file_mut(&path)?;
    if file.binary_size.is_some() {
        return Err(fail(format!(
            "{path} is a binary file; text cannot be appended"
        )));
    }
    file.save_version();
    file.content.push_str(text);
    ok(
        json!({"path": path, "size_bytes": file.size(), "appended_bytes": text.len(), "versions": file.versions.len()}),
    )
}

fn relocate(drive: &mut Drive, from: &str, to: String) -> Result<Value, ToolError> {
    if drive.files.contains_key(&to) {
        return Err(fail(format!("{to} already exists")));
    }
    let mut file = LISTED_FILE.take(&mut drive.files, from)?;
    file.modified = DEMO_NOW;
    let details = json!({"from": from, "file": file.to_json(&to)});
    drive.put(to, file);
    Ok(details)
}

fn rename_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let name = args.str("new_name")?.trim();
    if name.is_empty() || name.contains('/') {
        return Err(fail("new_name must be a plain file name without slashes"));
    }
    let target = format!("{}/{name}", parent(&path)).replace("//", "/");
    let mut drive = lock(&world.drive);
    ok(relocate(&mut drive, &path, target)?)
}

fn move_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let folder = clean_path(args.str("destination_folder")?)?;
    let name = path.rsplit('/').next().unwrap_or("").to_string();
    let mut drive = lock(&world.drive);
    if !drive.folders.contains(&folder) {
        return Err(not_found(
            "folder",
            &folder,
            "create it first with create_folder",
        ));
    }
    let target = format!("{folder}/{name}").replace("//", "/");
    ok(relocate(&mut drive, &path, target)?)
}

fn copy_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let destination = clean_path(args.str("destination")?)?;
    let mut drive = lock(&world.drive);
    if drive.files.contains_key(&destination) {
        return Err(fail(format!("{destination} already exists")));
    }
    let mut copy = drive.file(&path)?.clone();
    copy.modified = DEMO_NOW;
    copy.shared_with.clear();
    copy.starred = false;
    copy.versions.clear();
    let details = json!({"source": path, "copy": copy.to_json(&destination)});
    drive.put(destination, copy);
    ok(details)
}

fn delete_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let mut drive = lock(&world.drive);
    let file = LISTED_FILE.take(&mut drive.files, &path)?;
    let size = file.size();
    drive.trash.insert(path.clone(), file);
    ok(
        json!({"trashed": path, "size_bytes": size, "restorable_until": format_utc(DEMO_NOW + 30 * 86_400), "trash_items": drive.trash.len()}),
    )
}

fn restore_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let mut drive = lock(&world.drive);
    if drive.files.contains_key(&path) {
        return Err(fail(format!(
            "{path} exists again; rename it before restoring the trashed copy"
        )));
    }
    let file = Kind::new("trashed file", "see list_trash").take(&mut drive.trash, &path)?;
    let details = json!({"restored": file.to_json(&path), "trash_items": drive.trash.len()});
    drive.put(path, file);
    ok(details)
}

fn list_trash(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let drive = lock(&world.drive);
    let items: Vec<Value> = drive
        .trash
        .iter()
        .map(|(p, f)| json!({"path": p, "size_bytes": f.size()}))
        .collect();
    ok(json!({"items": items, "total": drive.trash.len()}))
}

fn search_files(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let folder = args.opt_str("folder")?.map(clean_path).transpose()?;
    let drive = lock(&world.drive);
    let mut matches = Vec::new();
    for (path, file) in &drive.files {
        if let Some(f) = &folder
            && !path.starts_with(&format!("{f}/"))
            && f != "/"
        {
            continue;
        }
        if matches_all(path, query) {
            matches.push(json!({"path": path, "line": ""}));
            continue;
        }
        if let Some(line) = file.content.lines().find(|l| matches_all(l, query)) {
            matches.push(json!({"path": path, "line": line}));
        } else if matches_all(&format!("{path} {}", file.content), query) {
            matches.push(json!({"path": path, "line": ""}));
        }
    }
    ok(listed("matches", matches))
}

fn get_file_info(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let drive = lock(&world.drive);
    let file = drive.file(&path)?;
    ok(json!({"file": file.to_json(&path), "versions": file.versions.len() + 1}))
}

fn share_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let email = args.str("email")?.trim().to_lowercase();
    if !email.contains('@') {
        return Err(fail(format!("{email:?} is not an email address")));
    }
    let role = args.str_or("role", "viewer")?;
    let mut drive = lock(&world.drive);
    let file = drive.file_mut(&path)?;
    file.shared_with.retain(|(e, _)| *e != email);
    file.shared_with.push((email, role.to_string()));
    ok(json!({"file": file.to_json(&path)}))
}

fn list_shared_files(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let drive = lock(&world.drive);
    ok(drive.files_where(
        |f| !f.shared_with.is_empty(),
        |p, f| json!({"path": p, "shared_with": f.shared_with.iter().map(|(e, r)| json!({"email": e, "role": r})).collect::<Vec<_>>()}),
    ))
}

fn star_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let starred = args.bool_or("starred", true)?;
    let mut drive = lock(&world.drive);
    let file = drive.file_mut(&path)?;
    file.starred = starred;
    ok(json!({"file": file.to_json(&path)}))
}

fn list_starred_files(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let drive = lock(&world.drive);
    ok(drive.files_where(|f| f.starred, |p, f| f.to_json(p)))
}

fn create_folder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let mut drive = lock(&world.drive);
    if drive.folders.contains(&path) || drive.files.contains_key(&path) {
        return Err(fail(format!("{path} already exists")));
    }
    let before = drive.folders.len();
    drive.ensure_folder(&path);
    ok(json!({"folder": path, "folders_created": drive.folders.len() - before}))
}

fn get_storage_usage(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let drive = lock(&world.drive);
    let used: u64 = drive
        .files
        .values()
        .chain(drive.trash.values())
        .map(DriveFile::size)
        .sum();
    let mut by_size: Vec<(&String, u64)> = drive.files.iter().map(|(p, f)| (p, f.size())).collect();
    by_size.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let largest: Vec<Value> = by_size
        .iter()
        .take(3)
        .map(|(p, s)| json!({"path": p, "size_bytes": s}))
        .collect();
    ok(
        json!({"used_bytes": used, "quota_bytes": QUOTA, "files": drive.files.len(), "largest": largest}),
    )
}

fn list_file_versions(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = clean_path(args.str("path")?)?;
    let drive = lock(&world.drive);
    let file = drive.file(&path)?;
    let mut versions: Vec<Value> = file
        .versions
        .iter()
        .enumerate()
        .map(|(i, (at, size))| json!({"version": i + 1, "saved_at": format_utc(*at), "size_bytes": size, "current": false}))
        .collect();
    versions.push(json!({"version": file.versions.len() + 1, "saved_at": format_utc(file.modified), "size_bytes": file.size(), "current": true}));
    ok(json!({"path": path, "versions": versions}))
}

fn compress_files(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let paths = args.str_list("paths")?;
    if paths.is_empty() {
        return Err(fail("paths must list at least one file"));
    }
    let archive = clean_path(args.str("archive_path")?)?;
    if !archive.ends_with(".zip") {
        return Err(fail("archive_path must end with .zip"));
    }
    let mut drive = lock(&world.drive);
    if drive.files.contains_key(&archive) {
        return Err(fail(format!("{archive} already exists")));
    }
    let mut total = 0u64;
    let mut listing = String::from("zip manifest\n");
    for raw in &paths {
        let path = clean_path(raw)?;
        let size = drive.file(&path)?.size();
        total += size;
        listing.push_str(&format!("{size}\t{path}\n"));
    }
    // Text compresses well; a rough, deterministic 45% ratio stands in for deflate.
    let compressed = (total * 45).div_ceil(100).max(22);
    let mut file = DriveFile::text(&listing, DEMO_NOW);
    file.binary_size = Some(compressed);
    drive.ensure_folder(&parent(&archive));
    drive.files.insert(archive.clone(), file);
    ok(
        json!({"archive": archive, "files": paths.len(), "original_bytes": total, "compressed_bytes": compressed}),
    )
}
