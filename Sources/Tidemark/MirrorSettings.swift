import GitStore
import Upstreams

/// A mirror's settings, kept under `[tidemark]` in `.git/config` so plain `git config` can read
/// and change them. Credentials are never stored: only where to get them.
public struct MirrorSettings: Sendable, Equatable {
    /// The upstream spec, e.g. `dir:/srv/items`.
    public var upstream: String
    /// The mirrored collections.
    public var collections: [String]
    /// Requests at once: item downloads, and DocuSign listing pages (at most 8).
    public var jobs: Int
    /// Whether item files go under fan-out folders (3 hex digits of the id's hash): true, false, or nil
    /// for automatic (fan out a collection that has more than 10,000 items at its first fetch).
    public var fanout: Bool?
    /// How old the last sync may be before `sync --if-stale` (without a duration) syncs again.
    public var refreshInterval: String?
    /// Seconds the incremental listing reaches back before the watermark.
    public var overlapSeconds: Int64
    /// `tidemark.fullListingInterval` as configured (nil: ``defaultFullListingInterval``): how old
    /// the last full listing may be before a fetch lists every item again instead of those
    /// changed since the watermark (only an upstream listing incrementally, `rest` with
    /// `sinceParam`, lists otherwise), which is how items deleted upstream are found.
    public var fullListingInterval: String?
    /// The interval a full listing is made at when `tidemark.fullListingInterval` is not set.
    public static let defaultFullListingInterval = "1d"
    /// ``fullListingInterval`` in seconds (the default's when unset or unusable).
    public var fullListingSeconds: Double {
        fullListingInterval.flatMap(DurationText.seconds) ?? DurationText.seconds(MirrorSettings.defaultFullListingInterval)!
    }
    /// ``refreshInterval`` in seconds, as `SyncOptions.ifStaleSeconds` takes it; nil when unset
    /// or unusable.
    public var refreshSeconds: Double? { refreshInterval.flatMap(DurationText.seconds) }
    /// Kind-specific options (`tokenEnv`, `itemsPath`, ...), keyed as in git config.
    public var options: [String: String]
    /// The fields left out of every stored item (`tidemark.ignoreField`, multi-valued): JSON
    /// pointers into the item, `*` standing for any member or element (see ``IgnoredFields``).
    public var ignoredFields: [String] = []
    /// Values in git config that cannot be used, by key (`tidemark.jobs`), with what is wrong;
    /// their defaults stand in. Only a fetch or sync needs them, and it fails with the message:
    /// the other commands (and `tidemark config`, which shows them) still work.
    public var problems: [String: String] = [:]

    /// Item downloads at once that a mirror accepts (`tidemark.jobs`, `--jobs`).
    package static let jobsRange = 1...256

    /// Why `jobs` is not accepted as `--jobs`, or nil when it is (or not given).
    package static func jobsProblem(_ jobs: Int?) -> String? {
        guard let jobs, !jobsRange.contains(jobs) else { return nil }
        return "--jobs must be a whole number from \(jobsRange.lowerBound) to \(jobsRange.upperBound), not \(jobs)"
    }

    /// Options passed through to upstream adapters: the kinds each means something for, and its
    /// default (nil: none), as `tidemark config` shows them.
    static let adapterOptions: [(key: String, kinds: Set<String>, value: String?)] = [
        ("tokenEnv", ["docusign", "wordpress", "rest"], nil),
        ("tokenCommand", ["docusign", "wordpress", "rest"], nil),
        ("basicEnv", ["wordpress", "rest"], nil),
        ("pageSize", ["docusign", "wordpress", "rest"], "100"),
        ("maxAttempts", ["docusign", "wordpress", "rest"], "5"),
        ("timeout", ["docusign", "wordpress", "rest"], "120"),
        ("maxItems", ["docusign", "wordpress", "rest"], "1000000"),
        ("sslCAInfo", ["docusign", "wordpress", "rest"], nil),
        ("itemsPath", ["rest"], ""),
        ("idField", ["rest"], "id"),
        ("modifiedField", ["rest"], "lastModified"),
        ("itemURL", ["rest"], nil),
        ("bodyPath", ["rest"], nil),
        ("paging", ["rest"], "none"),
        ("pageParam", ["rest"], "page"),
        ("perPageParam", ["rest"], "per_page"),
        ("firstPage", ["rest"], "1"),
        ("offsetParam", ["rest"], "offset"),
        ("limitParam", ["rest"], "limit"),
        ("cursorParam", ["rest"], "cursor"),
        ("sinceParam", ["rest"], nil),
    ]

    /// Option keys passed through to upstream adapters.
    package static let adapterOptionKeys = adapterOptions.map(\.key)

    /// The kinds of upstream (`dir`, `docusign`, `wordpress`, `rest`).
    package static let upstreamKinds = UpstreamFactory.kinds

    /// True for an environment variable name, as `tokenEnv` and each half of `basicEnv` must be.
    package static func isVariableName(_ name: String) -> Bool { Credentials.isVariableName(name) }

    /// Why `pointer` cannot name a field to leave out (`tidemark.ignoreField`), or nil when it can.
    package static func ignoredFieldProblem(_ pointer: String) -> String? { IgnoredFields.problem(pointer) }

    /// The upstream kinds (`docusign`, `rest`, ...) an adapter option means something for; nil
    /// for an unknown key.
    package static func kinds(ofOption key: String) -> Set<String>? {
        adapterOptions.first { $0.key == key }?.kinds
    }

    public init(upstream: String, collections: [String], jobs: Int = 8, fanout: Bool? = nil,
                refreshInterval: String? = nil, overlapSeconds: Int64 = 60, fullListingInterval: String? = nil,
                options: [String: String] = [:], ignoredFields: [String] = []) {
        self.upstream = upstream
        self.collections = collections
        self.jobs = jobs
        self.fanout = fanout
        self.refreshInterval = refreshInterval
        self.overlapSeconds = overlapSeconds
        self.fullListingInterval = fullListingInterval
        self.options = options
        self.ignoredFields = ignoredFields
    }

    /// The configuration handed to upstream adapters.
    public var upstreamConfiguration: UpstreamConfiguration {
        var configuration = UpstreamConfiguration(spec: upstream, collections: collections, options: options, jobs: jobs)
        configuration.ignoredFields = ignoredFields
        return configuration
    }

    /// Reads the settings of `repository`.
    /// - Throws: ``MirrorError/notAMirror(_:isRepository:)`` when `tidemark.upstream` is not set.
    static func load(from repository: Repository) throws(MirrorError) -> MirrorSettings {
        try mirrorErrors {
            guard let upstream = try repository.configString("tidemark.upstream") else {
                let path = repository.workdir ?? repository.gitDirectory
                if let head = try? repository.commit(repository.revparse("HEAD")), let message = SnapshotMessage.parse(head.message),
                   !message.upstream.isEmpty {
                    throw MirrorError.unconfiguredClone(path, upstream: message.upstream, collections: message.collections.map(\.name))
                }
                throw MirrorError.notAMirror(path, isRepository: true)
            }
            var options: [String: String] = [:]
            for key in adapterOptionKeys {
                if let value = try repository.configString("tidemark.\(key)") { options[key] = value }
            }
            var problems: [String: String] = [:]
            let jobsText = try repository.configString("tidemark.jobs")
            var jobs = Int(jobsText ?? "8") ?? 0
            if !jobsRange.contains(jobs) {
                problems["tidemark.jobs"] = "config tidemark.jobs must be a number from \(jobsRange.lowerBound) to \(jobsRange.upperBound), not '\(jobsText ?? "")'"
                jobs = 8
            }
            let overlapText = try repository.configString("tidemark.overlap")
            var overlap = Int64(overlapText ?? "60") ?? -1
            // Ten years at most: a date that far back is no longer a date (it was sent as year -292277022601).
            if overlap < 0 || overlap > 315_360_000 {
                problems["tidemark.overlap"] = "config tidemark.overlap must be a number of seconds (0 to 315360000, ten years), not '\(overlapText ?? "")'"
                overlap = 60
            }
            // Collections as git config lists them, each once; a name clone would refuse is a
            // problem, and without any the kind's default applies (a `git clone` of a mirror,
            // or `git config --unset`), as `tidemark config` shows it.
            var collections: [String] = []
            for name in try repository.configValues("tidemark.collection") where !collections.contains(name) {
                guard CollectionName.isValid(name) else {
                    problems["tidemark.collection"] = "config tidemark.collection: invalid collection name "
                        + "'\(Quoting.cQuoted(Array(name.utf8)))' (use lower-case letters, digits, '-' and '_', at most 64)"
                    continue
                }
                collections.append(name)
            }
            if collections.isEmpty, problems["tidemark.collection"] == nil,
               let name = Mirror.defaultCollection(kind: UpstreamConfiguration(spec: upstream).kind) {
                collections = [name]
            }
            let fanoutText = try repository.configString("tidemark.fanout")
            let fanout = fanoutText.flatMap(MirrorSettings.fanoutValue)
            if let fanoutText, fanout == nil {
                problems["tidemark.fanout"] = "config tidemark.fanout must be true, false or auto, not '\(fanoutText)'"
            }
            let refreshInterval = try repository.configString("tidemark.refreshInterval")
            if let refreshInterval, DurationText.seconds(refreshInterval) == nil {
                problems["tidemark.refreshInterval"] = DurationText.problem("tidemark.refreshInterval", refreshInterval)
            }
            let fullListingInterval = try repository.configString("tidemark.fullListingInterval")
            if let fullListingInterval, DurationText.seconds(fullListingInterval) == nil {
                problems["tidemark.fullListingInterval"] = DurationText.problem("tidemark.fullListingInterval", fullListingInterval)
            }
            // Each pointer once; one a fetch could not use is a problem (the others still show).
            let (ignoredFields, ignoredProblems) = IgnoredFields.checked(try repository.configValues("tidemark.ignoreField"))
            if let problem = ignoredProblems.last { problems["tidemark.ignoreField"] = "config tidemark.ignoreField: \(problem)" }
            var settings = MirrorSettings(
                upstream: upstream,
                collections: collections,
                jobs: jobs,
                fanout: fanout ?? nil,
                refreshInterval: refreshInterval,
                overlapSeconds: overlap,
                fullListingInterval: fullListingInterval,
                options: options,
                ignoredFields: ignoredFields)
            settings.problems = problems
            return settings
        }
    }

    /// A `tidemark.fanout` value read as git reads a boolean (`true`, `yes`, `on`, `1` and their
    /// opposites, any case), or `auto`: `.some(nil)` for `auto`, nil when it is none of these.
    static func fanoutValue(_ text: String) -> Bool?? {
        switch text.lowercased() {
        case "auto": return .some(nil)
        case "true", "yes", "on", "1": return .some(true)
        case "false", "no", "off", "0": return .some(false)
        default: return nil
        }
    }

    /// Writes the settings into `repository`'s own config file.
    func save(to repository: Repository) throws(MirrorError) {
        for (key, value) in [("upstream", upstream)] + options.map({ ($0.key, $0.value) }) + ignoredFields.map({ ("ignoreField", $0) }) {
            try MirrorSettings.checkConfigValue(key, value)
        }
        try mirrorErrors {
            try repository.setConfig("tidemark.upstream", upstream)
            try repository.setConfigValues("tidemark.collection", collections)
            if !ignoredFields.isEmpty { try repository.setConfigValues("tidemark.ignoreField", ignoredFields) }
            try repository.setConfig("tidemark.jobs", String(jobs))
            try repository.setConfig("tidemark.fanout", fanout.map { $0 ? "true" : "false" } ?? "auto")
            if let refreshInterval { try repository.setConfig("tidemark.refreshInterval", refreshInterval) }
            for key in options.keys.sorted() { try repository.setConfig("tidemark.\(key)", options[key]!) }
            // refs/tidemark/* keep reflogs without core.logAllRefUpdates=always (each update makes
            // sure of its log): `always` would give tags reflogs too, which `git gc` then reports
            // as errors for an annotated tag.
        }
    }

    /// Config values may not hold line breaks or control characters (CVE-2025-48384 class); a
    /// tab is written escaped (`\t`) and read back as it was, by libgit2 and git alike.
    static func checkConfigValue(_ key: String, _ value: String) throws(MirrorError) {
        if value.utf8.contains(where: { ($0 < 32 && $0 != 9) || $0 == 127 }) {
            let hint = key == "upstream" && value.hasPrefix("dir:")
                ? ": rename the folder, or give a symbolic link to it that has a plain name" : ""
            throw .invalidArgument("the value of \(key), \(Quoting.cQuoted(Array(value.utf8))), holds a line break or "
                                   + "control character, which tidemark does not store in .git/config\(hint)")
        }
    }
}
