use std::time::Duration;

use pretty_assertions::assert_eq;
use toolsearch::{Config, ConfigError, DirectoryStyle, Mode, Profile};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, None)
}

#[test]
fn defaults_true_false_and_json5() {
    let config = parse("{}").unwrap();
    assert_eq!(config.mode, Mode::Code);
    assert_eq!(config.code_timeout, Duration::from_millis(10_000));
    assert_eq!(config.memory_limit_bytes, 64 << 20);
    assert_eq!(
        (
            config.search_limits.default_limit(),
            config.search_limits.max_limit()
        ),
        (8, 20)
    );
    assert_eq!(
        (config.auto_max_tools, config.auto_max_schema_tokens),
        (32, 12_000)
    );
    assert_eq!(config.directory, DirectoryStyle::List);

    assert_eq!(
        parse("{tools: {toolSearch: true}}").unwrap(),
        Config::default()
    );
    assert_eq!(
        parse("{tools: {toolSearch: false}}").unwrap().mode,
        Mode::Direct
    );
    let json5 = parse(
        "// comments and trailing commas are fine\n{ tools: { toolSearch: { mode: 'directory', directory: 'namespaces', }, }, }",
    )
    .unwrap();
    assert_eq!(
        (json5.mode, json5.directory),
        (Mode::Directory, DirectoryStyle::Namespaces)
    );
}

#[test]
fn every_clamp() {
    let cases = [
        (
            "codeTimeoutMs: 10",
            "codeTimeoutMs 10 is outside 1000–60000; using 1000",
        ),
        ("codeTimeoutMs: 600000", "using 60000"),
        (
            "memoryLimitBytes: 1",
            "memoryLimitBytes 1 is outside 16777216–1073741824; using 16777216",
        ),
        ("memoryLimitBytes: 4294967296", "using 1073741824"),
        (
            "maxSearchLimit: 0",
            "maxSearchLimit 0 is outside 1–50; using 1",
        ),
        ("maxSearchLimit: 99", "using 50"),
        (
            "maxSearchLimit: 10, searchDefaultLimit: 12",
            "searchDefaultLimit 12 is outside 1–10; using 10",
        ),
        ("searchDefaultLimit: 0", "using 1"),
        ("autoMaxTools: 100000", "using 10000"),
        ("autoMaxSchemaTokens: 5000000", "using 1000000"),
    ];
    for (settings, warning) in cases {
        let config = parse(&format!("{{tools: {{toolSearch: {{{settings}}}}}}}")).unwrap();
        assert!(
            config.warnings.iter().any(|w| w.contains(warning)),
            "{settings}: {:?}",
            config.warnings
        );
    }
    let config = parse(
        "{tools: {toolSearch: {codeTimeoutMs: 10, maxSearchLimit: 99, searchDefaultLimit: 60}}}",
    )
    .unwrap();
    assert_eq!(config.code_timeout, Duration::from_millis(1_000));
    assert_eq!(
        (
            config.search_limits.default_limit(),
            config.search_limits.max_limit()
        ),
        (50, 50)
    );
}

#[test]
fn the_local_profile_and_explicit_precedence() {
    let local = parse("{profile: 'local'}").unwrap();
    assert_eq!(local.profile, Profile::Local);
    assert_eq!(local.mode, Mode::Tools);
    assert_eq!(
        (
            local.search_limits.default_limit(),
            local.search_limits.max_limit()
        ),
        (5, 10)
    );

    // Explicit values win over the profile's defaults.
    let explicit = parse("{profile: 'local', tools: {toolSearch: {mode: 'code', searchDefaultLimit: 7, maxSearchLimit: 30}}}").unwrap();
    assert_eq!(explicit.mode, Mode::Code);
    assert_eq!(
        (
            explicit.search_limits.default_limit(),
            explicit.search_limits.max_limit()
        ),
        (7, 30)
    );
    // Only the max given: the profile's default stays, clamped under it.
    let max_only = parse("{profile: 'local', tools: {toolSearch: {maxSearchLimit: 3}}}").unwrap();
    assert_eq!(
        (
            max_only.search_limits.default_limit(),
            max_only.search_limits.max_limit()
        ),
        (3, 3)
    );

    // --profile overrides the file's profile.
    let overridden = Config::parse("{profile: 'default'}", Some(Profile::Local)).unwrap();
    assert_eq!(overridden.mode, Mode::Tools);
    // auto defers to the profile's deferred mode unless told otherwise.
    let auto = parse("{profile: 'local', tools: {toolSearch: {mode: 'auto'}}}").unwrap();
    assert_eq!(
        (auto.mode, auto.auto_deferred_mode),
        (Mode::Auto, Mode::Tools)
    );
    let auto =
        parse("{tools: {toolSearch: {mode: 'auto', autoDeferredMode: 'directory'}}}").unwrap();
    assert_eq!(auto.auto_deferred_mode, Mode::Directory);
}

#[test]
fn each_invalid_value_names_its_key_and_what_is_accepted() {
    let cases = [
        (
            "{profil: 'local'}",
            "unknown config key \"profil\"; accepted keys here: profile, tools",
        ),
        (
            "{tools: {toolsearch: true}}",
            "unknown config key \"tools.toolsearch\"; accepted keys here: toolSearch",
        ),
        (
            "{tools: {toolSearch: {timeout: 5}}}",
            "unknown config key \"tools.toolSearch.timeout\"",
        ),
        (
            "{profile: 'remote'}",
            "invalid value for profile: \"remote\"; expected \"default\" or \"local\"",
        ),
        (
            "{tools: {toolSearch: 'yes'}}",
            "invalid value for tools.toolSearch: \"yes\"; expected false, true, or an object of settings",
        ),
        (
            "{tools: {toolSearch: {mode: 'direct'}}}",
            "invalid value for tools.toolSearch.mode: \"direct\"; expected \"code\", \"tools\", \"directory\" or \"auto\"",
        ),
        (
            "{tools: {toolSearch: {mode: 'fast'}}}",
            "invalid value for tools.toolSearch.mode: \"fast\"",
        ),
        (
            "{tools: {toolSearch: {autoDeferredMode: 'auto'}}}",
            "invalid value for tools.toolSearch.autoDeferredMode: \"auto\"; expected \"code\", \"tools\" or \"directory\"",
        ),
        (
            "{tools: {toolSearch: {autoMaxTools: -1}}}",
            "invalid value for tools.toolSearch.autoMaxTools: -1; expected a non-negative integer",
        ),
        (
            "{tools: {toolSearch: {autoMaxSchemaTokens: 'many'}}}",
            "invalid value for tools.toolSearch.autoMaxSchemaTokens",
        ),
        (
            "{tools: {toolSearch: {codeTimeoutMs: 1.5}}}",
            "invalid value for tools.toolSearch.codeTimeoutMs: 1.5; expected an integer number of milliseconds (1000–60000, default 10000)",
        ),
        (
            "{tools: {toolSearch: {memoryLimitBytes: '64MB'}}}",
            "invalid value for tools.toolSearch.memoryLimitBytes: \"64MB\"; expected an integer number of bytes (16 MiB–1 GiB, default 64 MiB)",
        ),
        (
            "{tools: {toolSearch: {searchDefaultLimit: null}}}",
            "invalid value for tools.toolSearch.searchDefaultLimit: null",
        ),
        (
            "{tools: {toolSearch: {maxSearchLimit: true}}}",
            "invalid value for tools.toolSearch.maxSearchLimit: true; expected a positive integer (1–50, default 20)",
        ),
        (
            "{tools: {toolSearch: {directory: 'tree'}}}",
            "invalid value for tools.toolSearch.directory: \"tree\"; expected \"list\" or \"namespaces\"",
        ),
        (
            "{mcp: {servers: {a: {command: 'x', protocol: '2025-11-25'}}}}",
            "invalid value for mcp.servers.a.protocol: \"2025-11-25\"; expected \"handshake\", \"2026-07-28\" or \"auto\"",
        ),
        ("{tools: []}", "invalid value for tools: []"),
        ("[]", "invalid value for (root)"),
        (
            "{tools: {toolSearch: {mode: 'code'}",
            "config is not valid JSON5",
        ),
    ];
    for (text, expected) in cases {
        let error = parse(text).unwrap_err().to_string();
        assert!(
            error.starts_with(expected) || error.contains(expected),
            "{text}\n  got: {error}\n  want: {expected}"
        );
    }
}

#[test]
fn an_mcp_servers_protocol_is_the_handshake_unless_set() {
    use toolsearch::McpProtocol;
    let config = parse(
        "{mcp: {servers: {a: {command: 'x'}, b: {command: 'x', protocol: '2026-07-28'}, \
         c: {url: 'http://127.0.0.1:1/mcp', protocol: 'auto'}, d: {command: 'x', protocol: 'handshake'}}}}",
    )
    .unwrap();
    let protocols: Vec<_> = config.mcp.iter().map(|server| server.protocol).collect();
    assert_eq!(
        protocols,
        [
            McpProtocol::Handshake,
            McpProtocol::Discover,
            McpProtocol::Auto,
            McpProtocol::Handshake
        ]
    );
}

#[test]
fn a_long_unknown_key_is_echoed_as_a_bounded_prefix() {
    let key = "k".repeat(10_000);
    let error = parse(&format!("{{tools: {{toolSearch: {{{key}: 1}}}}}}"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("unknown config key \"tools.toolSearch.kkk"),
        "{error:.300}"
    );
    assert!(error.contains("(10017 bytes)"), "{error:.300}");
    assert!(error.contains("accepted keys here"), "{error:.300}");
    assert!(error.len() < 600, "{} bytes", error.len());
}

#[test]
fn non_finite_numbers_name_the_key_and_the_rule() {
    for (number, shown) in [("Infinity", "inf"), ("-Infinity", "-inf"), ("NaN", "NaN")] {
        let text = format!("{{tools: {{toolSearch: {{codeTimeoutMs: {number}}}}}}}");
        let error = parse(&text).unwrap_err().to_string();
        assert!(
            error.contains("tools.toolSearch.codeTimeoutMs")
                && error.contains("non-finite number")
                && error.contains("not allowed"),
            "{number}: {error}"
        );
        assert!(error.contains(shown), "{number}: {error}");
        assert!(!error.contains("invalid value: null"), "{error}");
    }
    let error = parse("{mcp: {servers: {a: {command: 'x', callTimeoutMs: NaN}}}}")
        .unwrap_err()
        .to_string();
    assert!(error.contains("mcp.servers.a.callTimeoutMs"), "{error}");
}

#[test]
fn a_bad_mcp_glob_is_named_itself_wherever_it_is_in_the_list() {
    let rt = crate::support::rt();
    for (key, list) in [
        (
            "enabledTools",
            r#"["echo", "ad*", "bad[glob", "pi?", "fail"]"#,
        ),
        ("disabledTools", r#"["echo", "bad[glob", "fail"]"#),
    ] {
        let text = format!("{{mcp: {{servers: {{t: {{command: 'node', {key}: {list}}}}}}}}}");
        let config = parse(&text).unwrap();
        let error = rt.block_on(async { toolsearch::Upstreams::start(&config.mcp).map(|_| ()) });
        let error = error.unwrap_err().to_string();
        assert!(error.contains(&format!("mcp.servers.t.{key}")), "{error}");
        assert!(error.contains("\"bad[glob\""), "{error}");
        for good in ["\"echo\"", "\"fail\"", "\"ad*\""] {
            assert!(!error.contains(good), "{error}");
        }
    }
}

#[test]
fn semantic_settings_are_read_and_their_unknown_keys_refused() {
    let config = toolsearch::Config::parse(
        r#"{tools: {toolSearch: {semantic: {model: "models/m", cacheDir: "/tmp/v", unverified: true}}}}"#,
        None,
    )
    .unwrap();
    assert_eq!(
        config.semantic,
        toolsearch::SemanticSettings {
            model: Some("models/m".into()),
            cache_dir: Some("/tmp/v".into()),
            unverified: true,
        }
    );
    assert_eq!(
        toolsearch::Config::parse("{}", None).unwrap().semantic,
        toolsearch::SemanticSettings::default()
    );
    let error =
        toolsearch::Config::parse(r#"{tools: {toolSearch: {semantic: {modle: "m"}}}}"#, None)
            .unwrap_err()
            .to_string();
    assert!(error.contains("tools.toolSearch.semantic.modle"), "{error}");
    assert!(error.contains("model, cacheDir, unverified"), "{error}");
    for bad in [
        r#"{tools: {toolSearch: {semantic: {model: ""}}}}"#,
        r#"{tools: {toolSearch: {semantic: {model: 3}}}}"#,
        r#"{tools: {toolSearch: {semantic: {unverified: "yes"}}}}"#,
        r#"{tools: {toolSearch: {semantic: "models/m"}}}"#,
    ] {
        let error = toolsearch::Config::parse(bad, None)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("tools.toolSearch.semantic"),
            "{bad}: {error}"
        );
    }
}
