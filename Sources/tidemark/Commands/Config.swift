import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark config [<key>]`
    struct Config: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the mirror's effective settings, defaults marked.",
            discussion: """
                Settings live under [tidemark] in .git/config: set them with plain git config.
                Every key tidemark reads is listed with the value in use; '(default)' marks
                keys that are not set, '(unset)' keys with no default. Credentials are never
                stored, only where to get them (tokenEnv, tokenCommand, basicEnv).

                Examples:
                  tidemark config
                  tidemark config tidemark.jobs
                  git config tidemark.jobs 4
                  git config tidemark.refreshInterval 6h   # for 'sync --if-stale'
                  tidemark config --json
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Argument(help: "Print only this key's value (tidemark.jobs or jobs); exit 1 when it has none.")
        var key: String?

        @Flag(help: "Print a JSON report.")
        var json = false

        func run() async throws {
            let mirror = try root.openMirror()
            var settings = try await engine { () async throws(MirrorError) in try await mirror.effectiveSettings() }
            if let key {
                // git's section names ignore case: `TIDEMARK.JOBS` is `tidemark.jobs`.
                let full = key.lowercased().hasPrefix("tidemark.") ? "tidemark." + key.dropFirst("tidemark.".count) : "tidemark." + key
                let all = settings
                settings = settings.filter { $0.key.lowercased() == full.lowercased() }
                // A key tidemark never reads is most likely a typo: say so (still exit 1, and
                // nothing on stdout, as for a key that is not set). An option of another kind of
                // upstream is a key tidemark knows: unset here.
                let option = MirrorSettings.adapterOptionKeys.first { "tidemark." + $0.lowercased() == full.lowercased() }
                if settings.isEmpty, option == nil {
                    var unique: [String] = []
                    for name in all.map({ String($0.key.dropFirst("tidemark.".count)) }) where !unique.contains(name) {
                        unique.append(name)
                    }
                    let name = full.dropFirst(full.lowercased().hasPrefix("tidemark.") ? "tidemark.".count : 0).lowercased()
                    let similar = (unique + MirrorSettings.adapterOptionKeys).first { TidemarkCommand.editDistance($0.lowercased(), name) <= 2 }
                    throw CommandFailure.refused("tidemark reads no key '\(full)'" + (similar.map { " (did you mean 'tidemark.\($0)'?)" } ?? "")
                                                 + "; it reads: \(unique.joined(separator: ", "))")
                }
                if !json {
                    let values = settings.compactMap(\.value)
                    // Set, but hidden (it may be a secret) and not usable: say why, not nothing.
                    if values.isEmpty, let hidden = settings.first(where: { $0.problem != nil }) {
                        throw CommandFailure.refused("\(hidden.key) is set (value not shown), but not usable: \(hidden.problem!)")
                    }
                    guard !values.isEmpty else {
                        // An option of another kind of upstream: say why it has no value here.
                        let kind = mirror.settings.upstreamConfiguration.kind
                        if let option, let kinds = MirrorSettings.kinds(ofOption: option), !kinds.contains(kind) {
                            writeStandardError("tidemark.\(option) is not read for a \(kind) upstream (only for \(kinds.sorted().joined(separator: ", ")))\n")
                        }
                        throw CommandFailure.silent(1)
                    }
                    emit(values.map { $0 + "\n" }.joined())
                    // Shown as git shows it, and why a fetch would refuse it (as the full list marks it).
                    for setting in settings { if let problem = setting.problem { writeStandardError("warning: not usable: \(problem)\n") } }
                    return
                }
            }
            if json {
                emitJSON(ConfigJSON(settings))
                // As the text form: a key asked for that has no value exits 1 (its entry says
                // `null`, or there is none for an option of another kind of upstream).
                if key != nil, settings.allSatisfy({ $0.value == nil }) { throw CommandFailure.silent(1) }
                return
            }
            for setting in settings {
                if let problem = setting.problem {
                    let shown = setting.value.map { " = " + $0 } ?? " (value not shown)"
                    emit("\(setting.key)\(shown) (not usable: \(problem))\n")
                    continue
                }
                // An empty value (rest's itemsPath: the page is the list) is shown as "", not as
                // nothing after the "=".
                switch (setting.value.map { $0.isEmpty ? "\"\"" : $0 }, setting.isDefault) {
                case (nil, _): emit("\(setting.key) (unset)\n")
                case (let value?, true): emit("\(setting.key) = \(value) (default)\n")
                case (let value?, false): emit("\(setting.key) = \(value)\n")
                }
            }
        }
    }
}

/// `tidemark config --json`.
struct ConfigJSON: Encodable {
    struct Setting: Encodable {
        var key: String
        var value: String?
        var `default`: Bool
        var problem: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(key, forKey: .key)
            try container.encode(value, forKey: .value)   // null when unset
            try container.encode(`default`, forKey: .default)
            try container.encodeIfPresent(problem, forKey: .problem)
        }
        enum CodingKeys: String, CodingKey { case key, value, `default`, problem }
    }
    var settings: [Setting]
    init(_ settings: [EffectiveSetting]) {
        self.settings = settings.map { Setting(key: $0.key, value: $0.value, default: $0.isDefault, problem: $0.problem) }
    }
}
