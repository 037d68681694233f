import CLibGit2

/// One configuration entry: `section.subsection.key = value` with its level (local, global, ...).
public struct ConfigEntry: Sendable, Equatable {
    public let name: String
    public let value: String
}

extension Repository {
    private func withConfig<R>(snapshot: Bool, _ body: (OpaquePointer) throws(GitError) -> R) throws(GitError) -> R {
        let live = try makeHandle("git_repository_config") { git_repository_config(&$0, pointer) }
        defer { git_config_free(live) }
        guard snapshot else { return try body(live) }
        let frozen = try makeHandle("git_config_snapshot") { git_config_snapshot(&$0, live) }
        defer { git_config_free(frozen) }
        return try body(frozen)
    }

    /// The value of `name` (e.g. `tidemark.jobs`), or nil when unset.
    public func configString(_ name: String) throws(GitError) -> String? {
        try withConfig(snapshot: true) { (config) throws(GitError) -> String? in
            var buffer = git_buf()
            let rc = git_config_get_string_buf(&buffer, config, name)
            if rc == GIT_ENOTFOUND.rawValue { return nil }
            try check(rc, "reading config \(name)")
            return takeString(&buffer)
        }
    }

    /// The value of `name` read as git reads an integer (`50`, `1k`), or nil when unset.
    /// Throws when it is set to something else.
    public func configInteger(_ name: String) throws(GitError) -> Int64? {
        try configScalar(name, Int64(0)) { git_config_get_int64(&$0, $1, name) }
    }

    /// The value of `name` read as git reads a boolean (`true`, `no`, `1`, a bare key), or nil
    /// when unset. Throws when it is set to something else.
    public func configBool(_ name: String) throws(GitError) -> Bool? {
        try configScalar(name, Int32(0)) { git_config_get_bool(&$0, $1, name) }.map { $0 != 0 }
    }

    /// The value `get` reads for `name` from a snapshot of the config, or nil when unset.
    private func configScalar<T>(_ name: String, _ initial: T, _ get: (inout T, OpaquePointer) -> Int32) throws(GitError) -> T? {
        try withConfig(snapshot: true) { (config) throws(GitError) -> T? in
            var value = initial
            let rc = get(&value, config)
            if rc == GIT_ENOTFOUND.rawValue { return nil }
            try check(rc, "reading config \(name)")
            return value
        }
    }

    /// Every value of the multi-valued `name`, in file order.
    public func configValues(_ name: String) throws(GitError) -> [String] {
        // Entries are named with the section and key in lower case, as git compares them
        // (`tidemark.ignoreField` is `tidemark.ignorefield`); a subsection keeps its case.
        var parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[0] = parts[0].lowercased()
        if parts.count > 1 { parts[parts.count - 1] = parts[parts.count - 1].lowercased() }
        let normalized = parts.joined(separator: ".")
        return try configEntries(matching: "^" + normalized.replacingOccurrences(of: ".", with: "\\.") + "$").map(\.value)
    }

    /// Entries whose name matches the POSIX regular expression `pattern`, in order.
    public func configEntries(matching pattern: String) throws(GitError) -> [ConfigEntry] {
        try withConfig(snapshot: true) { (config) throws(GitError) -> [ConfigEntry] in
            let iterator = try makeHandle("git_config_iterator_glob_new") {
                git_config_iterator_glob_new(&$0, config, pattern)
            }
            defer { git_config_iterator_free(iterator) }
            var result: [ConfigEntry] = []
            var entry: UnsafeMutablePointer<git_config_entry>?
            while true {
                let rc = git_config_next(&entry, iterator)
                if rc == GIT_ITEROVER.rawValue { break }
                try check(rc, "reading config")
                guard let entry else { break }
                result.append(ConfigEntry(name: String(cString: entry.pointee.name),
                                          value: entry.pointee.value.map { String(cString: $0) } ?? ""))
            }
            return result
        }
    }

    /// Sets `name` to `value` in the repository's own config file (`.git/config`).
    public func setConfig(_ name: String, _ value: String) throws(GitError) {
        _ = try withConfig(snapshot: false) { (config) throws(GitError) in
            try check(git_config_set_string(config, name, value), "setting config \(name)")
        }
    }

    /// Replaces every value of the multi-valued `name` with `values`.
    public func setConfigValues(_ name: String, _ values: [String]) throws(GitError) {
        try withConfig(snapshot: false) { (config) throws(GitError) in
            let rc = git_config_delete_multivar(config, name, ".*")
            if rc != GIT_ENOTFOUND.rawValue { try check(rc, "clearing config \(name)") }
            for value in values {
                // A regexp that matches nothing appends a new value.
                try check(git_config_set_multivar(config, name, "^$a", value), "adding config \(name)")
            }
        }
    }

    /// Removes `name` from the repository's config file; does nothing when it is not set.
    public func removeConfig(_ name: String) throws(GitError) {
        try withConfig(snapshot: false) { (config) throws(GitError) in
            let rc = git_config_delete_entry(config, name)
            if rc != GIT_ENOTFOUND.rawValue { try check(rc, "removing config \(name)") }
        }
    }
}
