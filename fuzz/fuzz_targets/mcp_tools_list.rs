//! MCP `tools/list` ingestion on an arbitrary answer (decoded as the MCP client decodes it).
//! Invariants: every kept tool is an untrusted `mcp` tool of the server whose catalog name is
//! the escaping of its raw name and satisfies MCP's name rule; raw names are unique; bounds on
//! tools, descriptions and schemas hold; issues are bounded sentences; a snapshot builds from
//! the tools with unique ids.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use toolsearch::fuzzing::{
    CatalogSnapshot, MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS_PER_SERVER, McpApproval,
    McpServer, McpTransport, Source, escape, ingest_tools_list, is_valid_tool_name,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, answer)) = data.split_first() else {
        return;
    };
    let server = McpServer {
        name: "fuzz".into(),
        transport: McpTransport::Stdio {
            command: "node".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
        },
        startup_timeout: Duration::from_secs(1),
        call_timeout: Duration::from_secs(1),
        enabled_tools: (selector & 1 != 0).then(|| vec!["*e*".into(), "get_*".into()]),
        disabled_tools: if selector & 2 != 0 {
            vec!["*secret*".into()]
        } else {
            vec![]
        },
        approval: match selector % 3 {
            0 => McpApproval::Destructive,
            1 => McpApproval::Always,
            _ => McpApproval::Never,
        },
        restart: true,
        protocol: Default::default(),
    };
    let Ok(ingested) = ingest_tools_list(&server, answer) else {
        return;
    };
    assert!(ingested.tools.len() <= MAX_TOOLS_PER_SERVER);
    let mut raw_names = std::collections::HashSet::new();
    for listed in &ingested.tools {
        let d = &listed.descriptor;
        assert!(
            raw_names.insert(listed.raw_name.as_str()),
            "raw name kept twice"
        );
        assert_eq!(d.source, Source::Mcp, "an MCP tool is not untrusted");
        assert_eq!(d.owner, "fuzz");
        assert_eq!(d.name, escape(&listed.raw_name));
        assert!(
            is_valid_tool_name(&d.name),
            "catalog name {:?} breaks the MCP rule",
            d.name
        );
        assert!(d.description.len() <= MAX_DESCRIPTION_BYTES);
        assert!(d.input_schema.is_object(), "input schema is not an object");
        assert!(d.input_schema.to_string().len() <= MAX_SCHEMA_BYTES);
        if let Some(schema) = &d.output_schema {
            assert!(schema.is_object());
            assert!(schema.to_string().len() <= MAX_SCHEMA_BYTES);
        }
        if matches!(server.approval, McpApproval::Always) {
            assert!(d.requires_approval);
        }
        if matches!(server.approval, McpApproval::Never) {
            assert!(!d.requires_approval);
        }
        if server.disabled_tools.is_empty() && server.enabled_tools.is_none() {
            continue;
        }
        if !server.disabled_tools.is_empty() {
            assert!(!listed.raw_name.contains("secret"), "disabled tool kept");
        }
    }
    for issue in &ingested.issues {
        assert!(
            issue.chars().count() <= 512,
            "issue of {} chars",
            issue.chars().count()
        );
    }
    let snapshot = CatalogSnapshot::build(ingested.tools.into_iter().map(|l| l.descriptor));
    let mut ids: Vec<&str> = snapshot.tools().iter().map(|d| d.id.as_str()).collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "snapshot has duplicate ids");
});
