import Foundation
import Testing
import TidemarkFixtures

/// `tidemark config --json` as a key → (value, default) map (the first value of multi-valued keys).
private func settings(_ mirror: String) async throws -> [String: (value: String?, isDefault: Bool)] {
    let result = try await CLI.tidemark(["config", "--json"], in: mirror)
    #expect(result.status == 0, "\(result.stderr)")
    let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    var map: [String: (value: String?, isDefault: Bool)] = [:]
    for entry in object?["settings"] as? [[String: Any]] ?? [] {
        guard let key = entry["key"] as? String, map[key] == nil else { continue }
        map[key] = (entry["value"] as? String, entry["default"] as? Bool ?? false)
    }
    return map
}

@Suite("End to end: settings through plain git config", .serialized)
struct ConfigTests {
    /// Credentials for a plain `http://` host other than this machine are named with a warning
    /// (a mistyped `https://` put a DocuSign token on the network, silently); loopback is quiet.
    /// `GIT_CONFIG_GLOBAL` names the global config, as for git: the snapshot's author is the
    /// name it gives (not `~/.gitconfig`'s), and `/dev/null` keeps a broken `~/.gitconfig` away.
    @Test func theGlobalConfigIsTheOneGitConfigGlobalNames() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/home", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            try Data("[user]\n\tname = Home User\n\temail = home@example.org\n".utf8).write(to: URL(fileURLWithPath: root + "/home/.gitconfig"))
            try Data("[user]\n\tname = Global User\n\temail = global@example.org\n".utf8).write(to: URL(fileURLWithPath: root + "/global"))
            let environment = ["HOME": root + "/home", "GIT_CONFIG_GLOBAL": "global", "GIT_AUTHOR_NAME": "", "GIT_COMMITTER_NAME": ""]
            let clone = try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root, environment: environment)
            #expect(clone.status == 0, "\(clone.stderr)")
            #expect(try await CLI.git(["log", "-1", "--format=%an <%ae>"], in: root + "/m") == "Global User <global@example.org>\n")
            try Data("[user\n".utf8).write(to: URL(fileURLWithPath: root + "/home/.gitconfig"))
            let broken = try await CLI.tidemark(["status"], in: root + "/m", environment: ["HOME": root + "/home"])
            #expect(broken.status == 128 && broken.stderr.contains("failed to parse config file"), "\(broken.stderr)")
            let isolated = try await CLI.tidemark(["status"], in: root + "/m", environment: ["HOME": root + "/home", "GIT_CONFIG_GLOBAL": "/dev/null"])
            #expect(isolated.status == 0, "\(isolated.stderr)")
        }
    }

    /// A clone starts the branch `git init` would: `init.defaultBranch` when set (it was always
    /// `main`), else `main` (libgit2's own default is `master`); an invalid name is passed over.
    @Test func aCloneStartsTheBranchInitDefaultBranchNames() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2021-01-01T00:00:00Z")
            for (setting, branch) in [("trunk", "trunk"), (nil, "main"), ("bad..name", "main")] {
                try Data((setting.map { "[init]\n\tdefaultBranch = \($0)\n" } ?? "").utf8).write(to: URL(fileURLWithPath: root + "/global"))
                let environment = ["HOME": root, "GIT_CONFIG_GLOBAL": root + "/global"]
                let clone = try await CLI.tidemark(["clone", "-q", "dir:up", "m-\(branch)-\(setting ?? "")"], in: root, environment: environment)
                #expect(clone.status == 0, "\(clone.stderr)")
                #expect(try await CLI.git(["symbolic-ref", "HEAD"], in: root + "/m-\(branch)-\(setting ?? "")") == "refs/heads/\(branch)\n")
            }
        }
    }

    @Test func credentialsOverPlainHTTPToAnotherHostAreWarnedOf() async throws {
        let token = "CANARY-plain-http-5e1f-SECRET"
        let server = try await FixtureServer.start(items: 2, seed: 3, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let env = ["TIDEMARK_TEST_TOKEN": token]
            let warning = "warning: the credentials go to 0.0.0.0 over plain http, unencrypted; use https:// unless that network is trusted\n"
            let loopback = try await CLI.tidemark(["clone", "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account", "local",
                                                   "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env)
            #expect(loopback.status == 0 && !loopback.stderr.contains("plain http"), "\(loopback.stderr)")
            // 0.0.0.0 reaches this machine on Linux, but names no loopback address.
            let open = server.baseURL.replacingOccurrences(of: "127.0.0.1", with: "0.0.0.0")
            let clone = try await CLI.tidemark(["clone", "docusign:\(open)/restapi/v2.1/accounts/demo-account", "m",
                                                "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env)
            #expect(clone.status == 0 && clone.stderr.hasPrefix(warning), "\(clone.stderr)")
            let fetch = try await CLI.tidemark(["fetch", "-q"], in: root + "/m", environment: env)
            #expect(fetch.status == 0 && fetch.stderr == warning, "\(fetch.stderr)")
            let offline = try await CLI.tidemark(["sync", "--offline", "-q"], in: root + "/m", environment: env)
            #expect(offline.status == 0 && offline.stderr.isEmpty, "\(offline.stderr)")
        }
    }

    @Test func gitConfigValuesShowUpAndAreHonoured() async throws {
        let token = "CANARY-config-91c2d4-SECRET"
        let server = try await FixtureServer.start(items: 16, seed: 9, token: token)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let spec = "docusign:\(server.baseURL)/restapi/v2.1/accounts/demo-account"
            let env = ["TIDEMARK_TEST_TOKEN": token]
            #expect(try await CLI.tidemark(["clone", spec, "m", "--token-env", "TIDEMARK_TEST_TOKEN"], in: root, environment: env).status == 0)
            let mirror = root + "/m"
            var values = try await settings(mirror)
            #expect(values["tidemark.upstream"]?.value == spec && values["tidemark.upstream"]?.isDefault == false)
            #expect(values["tidemark.collection"]?.value == "templates")
            #expect(values["tidemark.jobs"]?.value == "8")
            #expect(values["tidemark.overlap"]?.value == "60" && values["tidemark.overlap"]?.isDefault == true)
            #expect(values["tidemark.refreshInterval"]?.value == nil && values["tidemark.refreshInterval"]?.isDefault == true)
            #expect(values["tidemark.tokenEnv"]?.value == "TIDEMARK_TEST_TOKEN")
            #expect(values["tidemark.pageSize"]?.value == "100" && values["tidemark.pageSize"]?.isDefault == true)
            #expect(values["tidemark.itemsPath"] == nil)   // a rest-only option, not listed for docusign

            try await CLI.git(["config", "tidemark.jobs", "4"], in: mirror)
            try await CLI.git(["config", "tidemark.pageSize", "5"], in: mirror)
            values = try await settings(mirror)
            #expect(values["tidemark.jobs"]?.value == "4" && values["tidemark.jobs"]?.isDefault == false)
            #expect(values["tidemark.pageSize"]?.value == "5" && values["tidemark.pageSize"]?.isDefault == false)
            let human = try await CLI.tidemark(["config"], in: mirror).stdout
            #expect(human.contains("tidemark.jobs = 4\n") && human.contains("tidemark.overlap = 60 (default)\n"))
            #expect(human.contains("tidemark.refreshInterval (unset)\n") && !human.contains(token))
            #expect(try await CLI.tidemark(["config", "jobs"], in: mirror).stdout == "4\n")
            #expect(try await CLI.tidemark(["config", "TIDEMARK.JOBS"], in: mirror).stdout == "4\n")  // as git: any case
            let unset = try await CLI.tidemark(["config", "tidemark.refreshInterval"], in: mirror)
            #expect(unset.status == 1 && unset.stdout.isEmpty && unset.stderr.isEmpty, "set, not read: as git config, silent")
            let otherKind = try await CLI.tidemark(["config", "sinceParam"], in: mirror)
            #expect(otherKind.status == 1 && otherKind.stdout.isEmpty, "\(otherKind.stdout)")
            #expect(otherKind.stderr == "tidemark.sinceParam is not read for a docusign upstream (only for rest)\n", "\(otherKind.stderr)")
            // A value a fetch would refuse is printed as git prints it, with why on stderr.
            try await CLI.git(["config", "tidemark.jobs", "abc"], in: mirror)
            let unusable = try await CLI.tidemark(["config", "jobs"], in: mirror)
            #expect(unusable.status == 0 && unusable.stdout == "abc\n", "\(unusable.stdout)")
            #expect(unusable.stderr == "warning: not usable: config tidemark.jobs must be a number from 1 to 256, not 'abc'\n", "\(unusable.stderr)")
            try await CLI.git(["config", "tidemark.jobs", "4"], in: mirror)
            // `--json` exits as the text form does (it exited 0 with `null`, or with no entry).
            for (key, status) in [("jobs", 0), ("refreshInterval", 1), ("sinceParam", 1)] {
                let json = try await CLI.tidemark(["config", key, "--json"], in: mirror)
                #expect(json.status == status && json.stdout.hasPrefix("{"), "\(key): \(json.status) \(json.stdout) \(json.stderr)")
            }
            let typo = try await CLI.tidemark(["config", "job"], in: mirror)
            #expect(typo.status == 1 && typo.stdout.isEmpty, "\(typo.stdout)")
            #expect(typo.stderr.hasPrefix("error: tidemark reads no key 'tidemark.job' (did you mean 'tidemark.jobs'?); it reads: upstream, collection, ignoreField, jobs,"),
                    "\(typo.stderr)")

            // Honoured: with 12 changed templates answered slowly, at most 4 downloads run at once
            // (the default would be 8), and the listing comes in pages of 5.
            let ids = server.ids(.docusign)
            for id in ids.prefix(12) { #expect(server.modify(.docusign, id: id)) }
            server.inject(FixtureFault(delay: 0.3, pathPrefix: "/restapi/v2.1/accounts/demo-account/templates/", count: 12))
            server.resetCounts()
            let fetch = try await CLI.tidemark(["fetch", "--json"], in: mirror, environment: env)
            #expect(fetch.status == 0, "\(fetch.stderr)")
            let downloads = server.requests.filter { $0.path.contains("/templates/") }.count
            let pages = server.requests.filter { $0.path.hasSuffix("/templates") }
            #expect(downloads == 12)
            #expect((2...4).contains(server.maxConcurrentRequests), "max in flight: \(server.maxConcurrentRequests)")
            #expect(pages.count == 4 && pages.allSatisfy { $0.query.contains("count=5") })

            // A token stored where its variable's name belongs is refused, and never echoed.
            try await CLI.git(["config", "tidemark.tokenEnv", token], in: mirror)
            let pasted = try await CLI.tidemark(["fetch"], in: mirror, environment: env)
            #expect(pasted.status == 128 && pasted.stderr.contains("tokenEnv") && !pasted.stderr.contains(token),
                    "\(pasted.stderr)")
            // `tidemark config` marks it too, and shows no value.
            let listed = try await CLI.tidemark(["config"], in: mirror)
            #expect(listed.stdout.contains("tidemark.tokenEnv (value not shown) (not usable: option tokenEnv takes the name"),
                    "\(listed.stdout)")
            let listedJSON = try await CLI.tidemark(["config", "--json"], in: mirror)
            #expect(!listed.stdout.contains(token) && !listedJSON.stdout.contains(token))
            #expect(listedJSON.stdout.contains("\"problem\" : \"option tokenEnv takes the name"), "\(listedJSON.stdout)")
            // A pasted token that is also a valid variable name (`ghp_...`, `sk_live_...`) is hidden too.
            for pastedName in ["ghp_AbCdEf0123456789AbCdEf0123456789abcd", "sk_live_51HxYzABCDEF"] {
                try await CLI.git(["config", "tidemark.tokenEnv", pastedName], in: mirror)
                let outputs = [try await CLI.tidemark(["config"], in: mirror), try await CLI.tidemark(["config", "--json"], in: mirror),
                               try await CLI.tidemark(["config", "tokenEnv"], in: mirror), try await CLI.tidemark(["fetch"], in: mirror)]
                #expect(outputs[0].stdout.contains("tidemark.tokenEnv (value not shown) (not usable: its value looks like a token"),
                        "\(outputs[0].stdout)")
                #expect(outputs.allSatisfy { !$0.stdout.contains(pastedName) && !$0.stderr.contains(pastedName) })
                // Asked for alone, it says why instead of nothing (exit 1 as for an unset key).
                #expect(outputs[2].status == 1 && outputs[2].stderr.contains("tidemark.tokenEnv is set (value not shown), but not usable: its value looks like a token"),
                        "\(outputs[2].stderr)")
            }
            try await CLI.git(["config", "tidemark.tokenEnv", "TIDEMARK_TEST_TOKEN"], in: mirror)

            // A bad value fails what needs it (a fetch) naming the key; the rest still works, and
            // `tidemark config` shows it, so it can be found and fixed.
            try await CLI.git(["config", "tidemark.jobs", "0"], in: mirror)
            let bad = try await CLI.tidemark(["fetch"], in: mirror, environment: env)
            #expect(bad.status == 128 && bad.stderr.contains("config tidemark.jobs must be a number from 1 to 256, not '0'"), "\(bad.stderr)")
            #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["log", "-1"], in: mirror).status == 0)
            let shown = try await CLI.tidemark(["config"], in: mirror)
            #expect(shown.status == 0 && shown.stdout.contains("tidemark.jobs = 0 (not usable: config tidemark.jobs must be"), "\(shown.stdout)")
            #expect(try await settings(mirror)["tidemark.jobs"]?.value == "0")
            #expect(try await CLI.tidemark(["fetch", "--jobs", "2"], in: mirror, environment: env).status == 0)

            // An adapter option the adapter refuses is marked too (it was listed as usable).
            try await CLI.git(["config", "tidemark.maxAttempts", "0"], in: mirror)
            let attempts = try await CLI.tidemark(["config"], in: mirror)
            #expect(attempts.stdout.contains("tidemark.maxAttempts = 0 (not usable: config tidemark.maxAttempts must be a whole number from 1 to 20"),
                    "\(attempts.stdout)")
            let attemptsJSON = try await CLI.tidemark(["config", "--json"], in: mirror).stdout
            #expect(attemptsJSON.contains("\"problem\" : \"config tidemark.maxAttempts must be a whole number from 1 to 20, got '0'\""), "\(attemptsJSON)")
            #expect(!attemptsJSON.contains("\"problem\" : \"config tidemark.pageSize"), "pageSize 5 is usable: \(attemptsJSON)")
            // A fetch names the key as the mirror's config holds it (it said "option maxAttempts",
            // as `clone --option` gives it).
            let refusedFetch = try await CLI.tidemark(["fetch", "--jobs", "2"], in: mirror, environment: env)
            #expect(refusedFetch.status == 128 && refusedFetch.stderr.contains("fatal: config tidemark.maxAttempts must be a whole number from 1 to 20, got '0'"),
                    "\(refusedFetch.stderr)")
            try await CLI.git(["config", "--unset", "tidemark.maxAttempts"], in: mirror)

            try await CLI.git(["config", "tidemark.refreshInterval", "5x"], in: mirror)
            #expect(try await CLI.tidemark(["config"], in: mirror).stdout.contains(
                "tidemark.refreshInterval = 5x (not usable: config tidemark.refreshInterval must be a duration"))
            let stale = try await CLI.tidemark(["sync", "--if-stale"], in: mirror, environment: env)
            #expect(stale.status == 128 && stale.stderr.contains("must be a duration like 30s, 15m, 6h or 1d, not '5x'"), "\(stale.stderr)")
            // Only `--if-stale` reads it: a plain sync, or one given its own duration, goes on.
            for arguments in [["sync"], ["sync", "--if-stale", "1s"], ["fetch"]] {
                let result = try await CLI.tidemark(arguments + ["--jobs", "2"], in: mirror, environment: env)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
        }
    }

    /// Every collection a fetch would drop is named, with the commands that keep them all (only
    /// the first was, and adding it back while tidemark.collection was unset made it the only
    /// one); a rollback to a snapshot that held a dropped collection counts its items as new (it
    /// recorded "no changes").
    /// An option refused alone for another it needs (`bodyPath` without `itemURL`) is usable
    /// when that one is set: `tidemark config` called `bodyPath` unusable in every mirror with
    /// an `itemURL`, and still does without one.
    @Test func anOptionNeedingAnotherIsUsableWithIt() async throws {
        let server = try await FixtureServer.start(items: 2, seed: 3)
        defer { Task { await server.stop() } }
        try await withScratch { root in
            let clone = try await CLI.tidemark(["clone", "rest:\(server.baseURL)/rest/items", "m", "--option", "itemURL=/rest/items/{id}"], in: root)
            #expect(clone.status == 0, "\(clone.stderr)")
            let mirror = root + "/m"
            try await CLI.git(["config", "tidemark.bodyPath", "/data"], in: mirror)
            #expect(try await settings(mirror)["tidemark.bodyPath"]?.value == "/data")
            let usable = try await CLI.tidemark(["config"], in: mirror)
            #expect(usable.stdout.contains("tidemark.bodyPath = /data\n") && !usable.stdout.contains("not usable"), "\(usable.stdout)")
            try await CLI.git(["config", "--unset", "tidemark.itemURL"], in: mirror)
            let unusable = try await CLI.tidemark(["config"], in: mirror)
            #expect(unusable.stdout.contains("tidemark.bodyPath = /data (not usable: config tidemark.bodyPath points into itemURL's answers: "
                                             + "set itemURL too)"), "\(unusable.stdout)")
        }
    }

    @Test func everyDroppedCollectionIsNamedAndARollbackCountsTheirItems() async throws {
        try await withScratch { root in
            for folder in ["posts", "pages"] {
                try FileManager.default.createDirectory(atPath: "\(root)/up/\(folder)", withIntermediateDirectories: true)
                for index in 1...2 { try writeItem("\(root)/up/\(folder)", "\(folder)\(index)", lastModified: "2024-01-01T00:00:00Z") }
            }
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m", "--collection", "posts", "--collection", "pages"], in: root).status == 0)
            let mirror = root + "/m"
            try await CLI.git(["config", "--unset-all", "tidemark.collection"], in: mirror)
            let refused = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(refused.status == 1 && refused.stderr.contains(
                "collections 'pages' (2 files) and 'posts' (2 files) are in the snapshot but no longer in tidemark.collection")
                && refused.stderr.contains("git config --add tidemark.collection pages && git config --add tidemark.collection posts"),
                "\(refused.stderr)")
            try await CLI.git(["config", "--add", "tidemark.collection", "posts"], in: mirror)
            #expect(try await CLI.tidemark(["sync", "-q", "--allow-mass-delete"], in: mirror).status == 0)
            // The dropped collection's items are still items to diff (they matched nothing, exit 0).
            let diff = try await CLI.tidemark(["diff", "--exit-code", "--name-status", "HEAD~1", "HEAD", "--", "pages/pages1"], in: mirror)
            #expect(diff.status == 1 && diff.stdout == "D\tpages/pages1.json\n", "\(diff.stdout)")
            #expect(try await CLI.tidemark(["diff", "--json", "HEAD~1", "HEAD"], in: mirror).stdout.contains("\"item\" : \"pages/pages2\""))
            #expect(try await CLI.tidemark(["rollback", "-q", "HEAD~1"], in: mirror).status == 0)
            let log = try JSONSerialization.jsonObject(with: Data(try await CLI.tidemark(["log", "-n1", "--json"], in: mirror).stdout.utf8))
            let snapshot = (log as? [[String: Any]])?.first
            #expect(snapshot?["new"] as? Int == 2 && snapshot?["deleted"] as? Int == 0, "\(String(describing: snapshot))")
            #expect(try await CLI.git(["log", "-1", "--format=%B"], in: mirror).contains("pages: 0 changed, 2 new, 0 deleted"))
        }
    }

    /// Settings changed with git config after the clone, as users (and a `git clone` of a mirror)
    /// leave them: no collection means the kind's default, a relative folder is the mirror's,
    /// git's boolean words work for fanout, and a value clone would refuse fails the fetch.
    @Test func settingsChangedWithGitConfigKeepTheMirrorWorking() async throws {
        try await withScratch { root in
            let upstream = root + "/up"
            try FileManager.default.createDirectory(atPath: upstream, withIntermediateDirectories: true)
            try writeItem(upstream, "a", lastModified: "2024-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"

            // No tidemark.collection: the dir kind's `items`, which fetch lists.
            try await CLI.git(["config", "--unset-all", "tidemark.collection"], in: mirror)
            try writeItem(upstream, "b", lastModified: "2024-01-02T00:00:00Z")
            #expect(try await CLI.tidemark(["-C", "m", "fetch", "-q"], in: root).status == 0)
            #expect(try await CLI.tidemark(["-C", "m", "status", "--porcelain"], in: root).stdout == "A  items/b\n")
            // `-Cm` is `-C m` (it was read as the short flags -C, -m: or -h, help, exit 0).
            #expect(try await CLI.tidemark(["-Cm", "status", "--porcelain"], in: root).stdout == "A  items/b\n")
            #expect(try await settings(mirror)["tidemark.collection"].map { ($0.value, $0.isDefault) }! == ("items", true))

            // A relative folder, from -C and from a subfolder.
            try await CLI.git(["config", "tidemark.upstream", "dir:../up"], in: mirror)
            for (directory, arguments) in [(root, ["-C", "m", "sync", "-q"]), (mirror + "/items", ["fetch", "-q"])] {
                let result = try await CLI.tidemark(arguments, in: directory)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/b.json"))

            // fanout read as git reads booleans; anything else is named.
            for (value, shown) in [("yes", "true"), ("On", "true"), ("0", "false"), ("auto", "auto")] {
                try await CLI.git(["config", "tidemark.fanout", value], in: mirror)
                #expect(try await CLI.tidemark(["config", "fanout"], in: mirror).stdout == shown + "\n", "\(value)")
            }
            for (key, value, message) in [("tidemark.fanout", "bogus", "config tidemark.fanout must be true, false or auto, not 'bogus'"),
                                          ("tidemark.collection", "Upper", "invalid collection name 'Upper'"),
                                          // A date that far back is none (it was sent as year -292277022601).
                                          ("tidemark.overlap", "9223372036854775807",
                                           "config tidemark.overlap must be a number of seconds (0 to 315360000, ten years)")] {
                try await CLI.git(["config", key, value], in: mirror)
                let fetch = try await CLI.tidemark(["fetch"], in: mirror)
                #expect(fetch.status == 128 && fetch.stderr.contains(message), "\(fetch.stderr)")
                #expect(try await CLI.tidemark(["status"], in: mirror).status == 0)
                #expect(try await CLI.tidemark(["config"], in: mirror).stdout.contains("\(key) = \(value) (not usable: "))
                try await CLI.git(["config", "--unset-all", key], in: mirror)
            }

            // One file that does not parse fails as its item; the other change is stored.
            try writeItem(upstream, "a", lastModified: "2024-02-01T00:00:00Z", extra: #", "v": 2"#)
            try Data("{oops".utf8).write(to: URL(fileURLWithPath: upstream + "/b.json"))
            let spoiled = try await CLI.tidemark(["fetch"], in: mirror)
            #expect(spoiled.status == 128 && spoiled.stderr.contains("1 item could not be downloaded")
                    && spoiled.stderr.contains("items/b: not valid JSON: expected a string key at byte 1 (in \(upstream)/b.json)"), "\(spoiled.stderr)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "M  items/a\n")
            try writeItem(upstream, "b", lastModified: "2024-02-02T00:00:00Z")
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.expectClean(mirror)
        }
    }

    /// A collection removed from tidemark.collection is not left behind, silently stale: fetch,
    /// sync and their dry run refuse naming it, and with --allow-mass-delete its files leave the
    /// snapshot (counted as deleted; the history keeps them).
    @Test func aCollectionRemovedFromTheSettingsIsDroppedWhenAllowed() async throws {
        try await withScratch { root in
            for folder in ["a", "b"] {
                try FileManager.default.createDirectory(atPath: "\(root)/up/\(folder)", withIntermediateDirectories: true)
                for index in 1...2 { try writeItem("\(root)/up/\(folder)", "\(folder)\(index)", lastModified: "2024-01-01T00:00:00Z") }
            }
            // A collection given twice is one (the clone failed with libgit2's "duplicate entries").
            let cloned = try await CLI.tidemark(["clone", "-q", "dir:up", "m", "--collection", "a", "--collection", "b", "--collection", "a"], in: root)
            #expect(cloned.status == 0, "\(cloned.stderr)")
            let mirror = root + "/m"
            #expect(try await CLI.git(["config", "--get-all", "tidemark.collection"], in: mirror) == "a\nb\n")
            let before = try await CLI.git(["rev-parse", "HEAD"], in: mirror)
            try await CLI.git(["config", "--unset", "tidemark.collection", "^b$"], in: mirror)
            for arguments in [["fetch"], ["sync"], ["sync", "--dry-run"]] {
                let refused = try await CLI.tidemark(arguments, in: mirror)
                #expect(refused.status == 1 && refused.stderr.contains("collection 'b' (2 files) is in the snapshot but no longer in tidemark.collection"),
                        "\(arguments): \(refused.stderr)")
            }
            #expect(try await CLI.git(["rev-parse", "HEAD"], in: mirror) == before)
            let plan = try await CLI.tidemark(["sync", "--dry-run", "--allow-mass-delete"], in: mirror)
            #expect(plan.status == 0 && plan.stdout.contains("0 changed, 0 new, 2 deleted"), "\(plan.stdout) \(plan.stderr)")
            let fetch = try await CLI.tidemark(["fetch", "--allow-mass-delete"], in: mirror)
            #expect(fetch.status == 0 && fetch.stdout.contains("collection 'b' dropped"), "\(fetch.stdout) \(fetch.stderr)")
            // The snapshot's summary names the collection whose items it deleted (it named `a` alone).
            let message = try await CLI.git(["log", "-1", "--format=%B", "refs/tidemark/upstream"], in: mirror)
            #expect(message.hasPrefix("Sync a, b: 0 changed, 0 new, 2 deleted\n\na: no changes\nb: 0 changed, 0 new, 2 deleted (no longer mirrored)\n"),
                    "\(message)")
            #expect(message.contains("Tidemark-Collection: a\n") && !message.contains("Tidemark-Collection: b"), "\(message)")
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "D  b/b1\nD  b/b2\n")
            let planAfterFetch = try await CLI.tidemark(["sync", "--dry-run"], in: mirror)
            #expect(planAfterFetch.status == 0 && planAfterFetch.stdout.contains("0 changed, 0 new, 2 deleted"), "\(planAfterFetch.stdout)")
            let sync = try await CLI.tidemark(["sync"], in: mirror)
            #expect(sync.status == 0 && sync.stdout.contains("0 changed, 0 new, 2 deleted"), "\(sync.stdout) \(sync.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/b") && !FileManager.default.fileExists(atPath: mirror + "/.tidemark/b.manifest"))
            #expect(FileManager.default.fileExists(atPath: mirror + "/a/a1.json"))
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            #expect(try await CLI.tidemark(["fetch"], in: mirror).status == 0)
            #expect(try await CLI.git(["show", "\(before.trimmingCharacters(in: .whitespacesAndNewlines)):b/b1.json"], in: mirror).contains("b1"))
            try await CLI.expectClean(mirror)
        }
    }

    @Test func syncIfStaleWithoutDurationUsesRefreshInterval() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2026-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let unset = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(unset.status == 128 && unset.stderr.contains("tidemark.refreshInterval"))

            try await CLI.git(["config", "tidemark.refreshInterval", "1h"], in: mirror)
            try writeItem(root + "/up", "b", lastModified: "2026-01-02T00:00:00Z")
            let fresh = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(fresh.status == 0 && fresh.stdout.hasPrefix("Cache is fresh"), "\(fresh.stdout)\(fresh.stderr)")
            let freshJSON = try await CLI.tidemark(["sync", "--if-stale", "--json"], in: mirror)
            #expect(freshJSON.stdout.contains("\"outcome\" : \"fresh\""), "\(freshJSON.stdout)\(freshJSON.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/b.json"))

            // A sync --offline applies the last fetch: the cache is as old as that fetch (two
            // hours here), not fresh.
            let twoHoursAgo = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-7200))
            try Data((twoHoursAgo + "\n").utf8).write(to: URL(fileURLWithPath: mirror + "/.git/tidemark/last-fetch"))
            #expect(try await CLI.tidemark(["sync", "--offline", "-q"], in: mirror).status == 0)
            let afterOffline = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(afterOffline.stdout.contains("Synced: 0 changed, 1 new, 0 deleted"), "\(afterOffline.stdout)\(afterOffline.stderr)")
            try writeItem(root + "/up", "c", lastModified: "2026-01-03T00:00:00Z")

            try await CLI.git(["config", "tidemark.refreshInterval", "0s"], in: mirror)
            let stale = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(stale.status == 0 && stale.stdout.contains("Synced: 0 changed, 1 new, 0 deleted"), "\(stale.stdout)\(stale.stderr)")
            #expect(FileManager.default.fileExists(atPath: mirror + "/items/c.json"))

            try await CLI.git(["config", "tidemark.refreshInterval", "soon"], in: mirror)
            let bad = try await CLI.tidemark(["sync", "--if-stale"], in: mirror)
            #expect(bad.status == 128 && bad.stderr.contains("tidemark.refreshInterval"))

            // A negative duration is refused as one, not read as the flags `-1 -h` (the help,
            // exit 0: a cron job would never sync).
            for given in [["--if-stale", "-1h"], ["--if-stale=-1h"], ["--if-stale", "-.5d"]] {
                let negative = try await CLI.tidemark(["sync"] + given, in: mirror)
                #expect(negative.status == 129, "\(given): \(negative.stdout)")
                #expect(negative.stderr.contains("--if-stale takes a duration like 30s, 15m, 6h or 1d (or auto), not '\(given.last!.replacingOccurrences(of: "--if-stale=", with: ""))'"),
                        "\(negative.stderr)")
            }
        }
    }
}
