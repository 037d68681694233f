import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark clone <upstream> [<dest>]`
    struct Clone: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a mirror of an upstream collection.",
            discussion: """
                Upstream specs:
                  dir:<folder>              a folder of *.json files (id: file name)
                  docusign:<account url>    DocuSign eSignature v2.1 templates
                  wordpress:<site url>      WordPress posts (--collection pages, any type)
                  rest:<list url>           a JSON REST collection

                Settings given here are stored under [tidemark] in the new mirror's
                .git/config (see 'tidemark config'); credentials never are, only where to get
                them.

                Examples:
                  tidemark clone dir:./templates cache
                  tidemark clone docusign:$ACCOUNT_URL --token-env DOCUSIGN_TOKEN --ignore-field /lastUsed
                  tidemark clone rest:https://api.example.org/items --option paging=link
                  tidemark clone wordpress:https://example.org \\
                      --collection posts --collection pages \\
                      --basic-env WP_USER:WP_APP_PASSWORD
                  tidemark clone rest:https://api.example.org/things \\
                      --token-env API_TOKEN --option itemsPath=/data \\
                      --option itemURL=https://api.example.org/things/{id}
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions
        @OptionGroup var transfer: TransferOptions

        @Argument(help: "The upstream: <kind>:<location>.")
        var upstream: String

        @Argument(help: "The folder to create (default: derived from the upstream).")
        var destination: String?

        @Option(name: .long, help: "A collection to mirror (repeatable; default: the upstream's).")
        var collection: [String] = []

        @Option(name: .customLong("ignore-field"),
                help: ArgumentHelp("Leave a field out of every stored item: a JSON pointer such as /lastUsed, '*' for any member or element (repeatable).",
                                   valueName: "pointer"))
        var ignoredFields: [String] = []

        @Option(help: "Requests at once: item downloads, and DocuSign listing pages (at most 8) (1-256).")
        var jobs = 8

        @Option(help: "Fan out item files into 4,096 subfolders: true, false or auto (more than 10,000 items).",
                completion: .list(["auto", "true", "false"]))
        var fanout: String = "auto"

        @Option(help: "Read the bearer token from this environment variable.")
        var tokenEnv: String?

        @Option(help: "Run this command to print the bearer token (like a git credential helper).")
        var tokenCommand: String?

        @Option(help: "HTTP Basic credentials from two environment variables: USER_VAR:PASS_VAR.")
        var basicEnv: String?

        @Option(name: .customLong("option"), help: ArgumentHelp("An upstream option key=value (itemsPath, idField, modifiedField, itemURL, bodyPath, paging, pageSize, pageParam, perPageParam, firstPage, offsetParam, limitParam, cursorParam, sinceParam, maxAttempts, timeout, maxItems, sslCAInfo).", valueName: "key=value"))
        var options: [String] = []

        @Flag(help: "Print a JSON report on stdout.")
        var json = false

        func validate() throws {
            try validateJobs(jobs)
            guard upstream.contains(":") else {
                throw ValidationError("the upstream must be <kind>:<location>, e.g. dir:./items")
            }
            guard ["auto", "true", "false"].contains(fanout) else {
                throw ValidationError("--fanout takes true, false or auto")
            }
            for pointer in ignoredFields {
                if let problem = MirrorSettings.ignoredFieldProblem(pointer) { throw ValidationError("--ignore-field: \(problem)") }
            }
            let kind = String(upstream.prefix { $0 != ":" })
            var given: [String: String] = [:]
            for option in options {
                guard let equals = option.firstIndex(of: "=") else {
                    throw ValidationError("--option takes key=value, not '\(option)'")
                }
                let key = String(option[..<equals])
                guard let kinds = MirrorSettings.kinds(ofOption: key) else {
                    let similar = MirrorSettings.adapterOptionKeys.filter { TidemarkCommand.editDistance($0.lowercased(), key.lowercased()) <= 2 }
                    throw ValidationError("--option: unknown key '\(key)'" + (similar.isEmpty ? "" : "; did you mean '\(similar[0])'?")
                                          + " (known: \(MirrorSettings.adapterOptionKeys.joined(separator: ", ")))")
                }
                try Clone.check(key, "--option \(key)", appliesTo: kind, kinds: kinds)
                given[key] = String(option[option.index(after: equals)...])
            }
            for (key, flag, value) in [("tokenEnv", "--token-env", tokenEnv), ("tokenCommand", "--token-command", tokenCommand),
                                       ("basicEnv", "--basic-env", basicEnv)] {
                guard let value else { continue }
                try Clone.check(key, flag, appliesTo: kind, kinds: MirrorSettings.kinds(ofOption: key) ?? [])
                if let other = given[key], other != value {
                    throw ValidationError("\(flag) and --option \(key)= give two different values; give one")
                }
                given[key] = value
            }
            // Names, not secrets: a token pasted here would be stored in .git/config and echoed.
            if let name = given["tokenEnv"], !MirrorSettings.isVariableName(name) {
                throw ValidationError("--token-env takes the name of an environment variable (letters, digits and _), and what was given is not one; the token itself goes in that variable")
            }
            if let names = given["basicEnv"].map({ $0.split(separator: ":", omittingEmptySubsequences: false) }),
               names.count != 2 || !names.allSatisfy({ MirrorSettings.isVariableName(String($0)) }) {
                throw ValidationError("--basic-env takes two environment variable names, USER_VAR:PASS_VAR, and what was given is not that; the credentials themselves go in those variables")
            }
        }

        /// Rejects an adapter option given for an upstream kind it means nothing for.
        static func check(_ key: String, _ flag: String, appliesTo kind: String, kinds: Set<String>) throws {
            // An unknown kind is the adapter factory's error, with its own message.
            guard MirrorSettings.upstreamKinds.contains(kind), !kinds.contains(kind) else { return }
            throw ValidationError("\(flag) means nothing for a \(kind) upstream (it applies to: \(kinds.sorted().joined(separator: ", ")))")
        }

        func run() async throws {
            try root.checkDirectory()
            var adapterOptions: [String: String] = [:]
            for option in options {
                let parts = option.split(separator: "=", maxSplits: 1).map(String.init)
                adapterOptions[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            if let tokenEnv { adapterOptions["tokenEnv"] = tokenEnv }
            if let tokenCommand { adapterOptions["tokenCommand"] = tokenCommand }
            if let basicEnv { adapterOptions["basicEnv"] = basicEnv }
            // A certificates file is named from where the clone runs: `-C` too.
            if let path = adapterOptions["sslCAInfo"], !path.isEmpty {
                adapterOptions["sslCAInfo"] = root.path(Mirror.expandingHome(path))
            }
            var spec = upstream
            // An empty `dir:` stays empty (an error naming the missing folder), not the current folder.
            if spec.hasPrefix("dir:"), spec.count > 4 { spec = "dir:" + root.path(String(spec.dropFirst(4))) }
            let named = destination ?? Clone.defaultDestination(for: upstream)
            let target = root.path(named)
            // `tidemark clone dir:templates` from its parent: the name a destination gets by
            // default is the upstream folder's own (it said the folder "already exists"). Only
            // when that folder exists: a mistyped one is named as missing by the clone.
            var isFolder: ObjCBool = false
            if destination == nil, spec.hasPrefix("dir:"),
               FileManager.default.fileExists(atPath: String(spec.dropFirst(4)), isDirectory: &isFolder), isFolder.boolValue,
               URL(fileURLWithPath: target).standardizedFileURL.path == URL(fileURLWithPath: String(spec.dropFirst(4))).standardizedFileURL.path {
                throw CommandFailure.fatal("the destination a clone takes by default, '\(named)' (the location's last part), "
                                           + "is the upstream folder itself: give one, as 'tidemark clone \(upstream) \(named)-mirror'")
            }
            warnIfCredentialsInClear(UpstreamConfiguration(spec: spec, options: adapterOptions))
            var cloneOptions = CloneOptions(collections: collection, options: adapterOptions, jobs: jobs,
                                            fanout: fanout == "auto" ? nil : fanout == "true")
            cloneOptions.ignoredFields = ignoredFields
            let announcement = output.quiet || json ? nil : "Cloning into '\(named)'...\n"
            var started: (@Sendable () -> Void)?
            if let announcement { started = { writeStandardError(announcement) } }
            let reporter = transfer.reporter(output)
            defer { reporter?.finish() }
            var progress: (@Sendable (ProgressEvent) -> Void)?
            var requestObserver: HTTPRequestObserver?
            if let reporter {
                progress = { (event: ProgressEvent) in reporter.handle(event) }
                requestObserver = { (record: HTTPRequestRecord) in reporter.handle(record) }
            }
            let interruption = CloneInterruption(destination: target)
            defer { interruption.finish() }
            let (_, report) = try await engine { [progress, requestObserver, started, json] () async throws(MirrorError) in
                do throws(MirrorError) {
                    return try await Mirror.clone(spec, to: target, options: cloneOptions, progress: progress,
                                                  requestObserver: requestObserver, started: started)
                } catch {
                    // Kept for a sync to finish: the report a script reads, as a sync's whose
                    // downloads partly failed (no branch yet), before the error.
                    if json, case .cloneIncomplete(let fetch, _?) = error { emitJSON(SyncJSON(SyncReport(incompleteFetch: fetch, branchAt: nil))) }
                    throw error
                }
            }
            interruption.finish()
            reporter?.finish()
            tellVanished(report.fetch)
            if json {
                emitJSON(SyncJSON(report))
            } else if !output.quiet {
                // Items gone before their download are listed, not cloned.
                let cloned = (report.fetch?.listed ?? 0) - (report.fetch?.vanished.count ?? 0)
                emit("Cloned \(cloned) item\(cloned == 1 ? "" : "s") (\(report.fetch?.downloaded ?? 0) downloaded) into snapshot \(report.current?.short() ?? "-").\n")
            }
        }

        /// `dir:/srv/templates` → `templates`; URLs → their last path component (no query) or host.
        static func defaultDestination(for spec: String) -> String {
            let location = spec.split(separator: ":", maxSplits: 1).last.map(String.init) ?? spec
            let trimmed = location.hasSuffix("/") ? String(location.dropLast()) : location
            var path = trimmed
            if let url = URL(string: trimmed), let host = url.host {
                if url.path.isEmpty || url.path == "/" { return host }
                // The path's last part, without a query or fragment.
                path = url.path
            }
            let name = path.split(separator: "/").last.map(String.init) ?? "mirror"
            return name.isEmpty || name == "." || name == ".." ? "mirror" : name
        }
    }
}
