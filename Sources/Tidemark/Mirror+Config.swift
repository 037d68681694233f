import GitStore
import Upstreams

/// One effective setting of a mirror, as `tidemark config` lists it.
public struct EffectiveSetting: Sendable, Equatable, Codable {
    /// The git config key, e.g. `tidemark.jobs`.
    public var key: String
    /// The value in use; nil when the key is unset and has no default (e.g. no `tokenEnv`).
    public var value: String?
    /// True when the key is not set in git config and `value` is tidemark's default.
    public var isDefault: Bool
    /// Why the value set in git config cannot be used (`value` is then that value, as set); a
    /// fetch or sync fails with this message until it is fixed.
    public var problem: String?

    public init(key: String, value: String?, isDefault: Bool, problem: String? = nil) {
        self.key = key
        self.value = value
        self.isDefault = isDefault
        self.problem = problem
    }
}

extension Mirror {
    /// The credential options of `options` that a fetch would refuse, each with the reason
    /// (``Credentials/init(options:environment:commandTimeout:)`` decides; no message holds a value).
    static func credentialProblems(_ options: [String: String]) -> [String: String] {
        let given = Credentials.optionKeys.filter { options[$0] != nil }
        var problems: [String: String] = [:]
        for key in given {
            do {
                _ = try Credentials(options: [key: options[key]!], environment: [:])
            } catch {
                problems[key] = "\(error)"
            }
        }
        // A variable name that looks like a token may be one, pasted: not shown either.
        for key in ["tokenEnv", "basicEnv"] where problems[key] == nil {
            guard let value = options[key],
                  value.split(separator: ":").contains(where: { Credentials.looksLikeToken(String($0)) }) else { continue }
            problems[key] = "its value looks like a token rather than the name of an environment variable, so it is not "
                + "shown; the token goes in a variable, and the option names that variable"
        }
        if problems.isEmpty, given.count > 1 {
            do {
                _ = try Credentials(options: options.filter { given.contains($0.key) }, environment: [:])
            } catch {
                for key in given { problems[key] = "\(error)" }
            }
        }
        return problems
    }

    /// The adapter options set (other than credentials) that the adapter refuses, each with its
    /// message: the adapter is made with each alone (and the credential options), as a fetch
    /// would make it, and shut down again; nothing is requested. None when it cannot be made
    /// without them either (an upstream folder gone): that is no option's problem.
    func adapterOptionProblems(skipping skipped: Set<String>) async -> [String: String] {
        let credentials = Set(Credentials.optionKeys)
        let resolved = upstreamConfiguration
        var base = resolved
        base.options = base.options.filter { credentials.contains($0.key) && !skipped.contains($0.key) }
        func refusal(_ configuration: UpstreamConfiguration) async -> String? {
            do {
                let upstream = try UpstreamFactory.make(configuration)
                await upstream.shutdown()
                return nil
            } catch {
                return Mirror.namingConfigKey("\(error)")
            }
        }
        guard await refusal(base) == nil else { return [:] }
        var problems: [String: String] = [:]
        for (key, value) in resolved.options where !credentials.contains(key) {
            var alone = base
            alone.options[key] = value
            problems[key] = await refusal(alone)
        }
        // An option refused alone for one it needs (`bodyPath` without `itemURL`) is no problem
        // when it is accepted with the others that are none.
        for key in problems.keys {
            var together = resolved
            together.options = resolved.options.filter { !skipped.contains($0.key) && ($0.key == key || problems[$0.key] == nil) }
            if await refusal(together) == nil { problems[key] = nil }
        }
        return problems
    }

    /// The collection an upstream kind mirrors when none is configured.
    static func defaultCollection(kind: String) -> String? {
        ["dir": "items", "docusign": "templates", "wordpress": "posts", "rest": "items"][kind]
    }

    /// Every setting ``MirrorSettings`` reads, in a fixed order, with the value in use and
    /// whether it is a default. Adapter options are listed when set, or when they apply to the
    /// mirror's upstream kind.
    ///
    /// ```swift
    /// for setting in try await mirror.effectiveSettings() where !setting.isDefault {
    ///     print(setting.key, setting.value ?? "")
    /// }
    /// ```
    public func effectiveSettings() async throws(MirrorError) -> [EffectiveSetting] {
        func isSet(_ key: String) throws(MirrorError) -> Bool {
            try mirrorErrors { try repository.configString("tidemark.\(key)") != nil }
        }
        let kind = settings.upstreamConfiguration.kind
        var result = [EffectiveSetting(key: "tidemark.upstream", value: settings.upstream, isDefault: false)]
        let configured = try mirrorErrors { try repository.configValues("tidemark.collection") }
        if configured.isEmpty {
            result.append(EffectiveSetting(key: "tidemark.collection", value: Mirror.defaultCollection(kind: kind), isDefault: true))
        } else {
            // As configured, each unusable name with the problem it makes.
            result += configured.map { name in
                EffectiveSetting(key: "tidemark.collection", value: name, isDefault: false,
                                 problem: CollectionName.isValid(name) ? nil : settings.problems["tidemark.collection"])
            }
        }
        let ignored = try mirrorErrors { try repository.configValues("tidemark.ignoreField") }
        if ignored.isEmpty {
            result.append(EffectiveSetting(key: "tidemark.ignoreField", value: nil, isDefault: true))
        } else {
            result += ignored.map { pointer in
                EffectiveSetting(key: "tidemark.ignoreField", value: pointer, isDefault: false,
                                 problem: IgnoredFields.problem(pointer).map { "config tidemark.ignoreField: \($0)" })
            }
        }
        result.append(EffectiveSetting(key: "tidemark.jobs", value: String(settings.jobs), isDefault: !(try isSet("jobs"))))
        result.append(EffectiveSetting(key: "tidemark.fanout", value: settings.fanout.map { $0 ? "true" : "false" } ?? "auto",
                                       isDefault: !(try isSet("fanout"))))
        result.append(EffectiveSetting(key: "tidemark.refreshInterval", value: settings.refreshInterval,
                                       isDefault: settings.refreshInterval == nil))
        result.append(EffectiveSetting(key: "tidemark.overlap", value: String(settings.overlapSeconds),
                                       isDefault: !(try isSet("overlap"))))
        result.append(EffectiveSetting(key: "tidemark.fullListingInterval",
                                       value: settings.fullListingInterval ?? MirrorSettings.defaultFullListingInterval,
                                       isDefault: settings.fullListingInterval == nil))
        for index in result.indices where !["tidemark.collection", "tidemark.ignoreField"].contains(result[index].key) {
            guard let problem = settings.problems[result[index].key] else { continue }
            result[index].value = try mirrorErrors { try repository.configString(result[index].key) }
            result[index].problem = problem
        }
        let credentialProblems = Mirror.credentialProblems(settings.options)
        let optionProblems = await adapterOptionProblems(skipping: Set(credentialProblems.keys))
        for option in MirrorSettings.adapterOptions {
            if let problem = optionProblems[option.key], let value = settings.options[option.key] {
                result.append(EffectiveSetting(key: "tidemark.\(option.key)", value: value, isDefault: false, problem: problem))
            } else if let problem = credentialProblems[option.key] {
                // Not shown: a value that is no variable name may be the token itself.
                result.append(EffectiveSetting(key: "tidemark.\(option.key)", value: nil, isDefault: false, problem: problem))
            } else if let value = settings.options[option.key] {
                result.append(EffectiveSetting(key: "tidemark.\(option.key)", value: value, isDefault: false))
            } else if option.kinds.contains(kind) {
                result.append(EffectiveSetting(key: "tidemark.\(option.key)", value: option.value, isDefault: true))
            }
        }
        return result
    }
}
