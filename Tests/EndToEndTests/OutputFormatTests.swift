import Foundation
import Testing

/// The JSON examples of Documentation/OutputFormats.md, by section heading (`tidemark sync --json`).
private func documentedExamples() throws -> [String: [Any]] {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Documentation/OutputFormats.md").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    var examples: [String: [Any]] = [:]
    var section = ""
    var block: [String]?
    for line in text.components(separatedBy: "\n") {
        if line.hasPrefix("## ") {
            section = String(line.dropFirst(3)).trimmingCharacters(in: CharacterSet(charactersIn: "` "))
        } else if line == "```json" {
            block = []
        } else if line == "```", let lines = block {
            let json = try JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8))
            examples[section, default: []].append(json)
            block = nil
        } else if block != nil {
            block!.append(line)
        }
    }
    return examples
}

/// The section's prose and examples, for "is this field documented".
private func sectionText(_ heading: String) throws -> String {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Documentation/OutputFormats.md").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let parts = text.components(separatedBy: "\n## ")
    return parts.first { $0.hasPrefix("`\(heading)`") } ?? ""
}

private func keys(_ json: Any) -> Set<String> {
    if let object = json as? [String: Any] { return Set(object.keys) }
    if let array = json as? [[String: Any]], let first = array.first { return Set(first.keys) }
    return []
}

@Suite("End to end: --json outputs match Documentation/OutputFormats.md")
struct OutputFormatTests {
    @Test func everyJSONOutputParsesAndHasTheDocumentedFields() async throws {
        let examples = try documentedExamples()
        try await withScratch { root in
            let up = root + "/up"
            try FileManager.default.createDirectory(atPath: up, withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(up, id, lastModified: "2026-01-01T00:00:00Z") }
            var outputs: [(heading: String, example: Int, json: Any)] = []
            func run(_ heading: String, example: Int = 0, _ arguments: [String], in directory: String) async throws {
                let result = try await CLI.tidemark(arguments, in: directory)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
                outputs.append((heading, example, json))
            }
            try await run("tidemark clone --json", ["clone", "dir:up", "m", "--json"], in: root)
            let mirror = root + "/m"
            try writeItem(up, "b", lastModified: "2026-02-01T00:00:00Z")
            try FileManager.default.removeItem(atPath: up + "/c.json")
            try writeItem(up, "d", lastModified: "2026-02-01T00:00:00Z")
            try await run("tidemark fetch --json", ["fetch", "--json"], in: mirror)
            try await run("tidemark status --json", ["status", "--json"], in: mirror)
            try await run("tidemark diff --stat --json", ["diff", "--stat", "--json"], in: mirror)
            try await run("tidemark sync --json", example: 1, ["sync", "--dry-run", "--json"], in: mirror)
            try await run("tidemark sync --json", ["sync", "--json"], in: mirror)
            try await run("tidemark log --json", ["log", "--json"], in: mirror)
            try await run("tidemark log --json", example: 1, ["log", "--json", "-n", "1", "--", "items/b"], in: mirror)
            try await run("tidemark ls --json", ["ls", "--json"], in: mirror)
            try await run("tidemark rollback --json", ["rollback", "HEAD~1", "--json"], in: mirror)
            try await run("tidemark config --json", ["config", "--json"], in: mirror)

            var checked: Set<String> = []
            for (heading, index, json) in outputs {
                let documented = try #require(examples[heading], "no example for \(heading)")
                checked.insert(heading)
                let example = documented[min(index, documented.count - 1)]
                let actual = keys(json)
                #expect(!actual.isEmpty)
                // Every documented field exists in the real output...
                #expect(keys(example).subtracting(actual).isEmpty, "\(heading): missing \(keys(example).subtracting(actual))")
                // ...and every real field is documented (in the example or the section's text).
                let text = try sectionText(heading)
                let undocumented = actual.filter { !keys(example).contains($0) && !text.contains("`\($0)`") }
                #expect(undocumented.isEmpty, "\(heading): undocumented \(undocumented)")
            }
            #expect(checked == Set(examples.keys), "examples without a check: \(Set(examples.keys).subtracting(checked))")
        }
    }
}

    /// Output that cannot be written (a full disk) fails the command as git's does, exit 128:
    /// `status --json > state.json` exited 0 with an empty file. A closed stdout or stderr is
    /// `/dev/null`'s, as git makes it, so nothing the run writes there lands in a file it opens.
    @Test func stdoutThatCannotBeWrittenFailsTheCommand() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            for command in ["log", "status --json", "help sync", "config"] {
                let full = try await CLI.run("/bin/sh", ["-c", "\"$0\" \(command) >/dev/full", CLI.tidemark], in: mirror)
                #expect(full.status == 128 && full.stderr == "fatal: write failure on 'stdout': No space left on device\n",
                        "\(command): \(full.status) \(full.stderr)")
            }
            try writeItem(upstream, "i2", lastModified: "2021-05-01T00:00:00Z", extra: #", "v": 2"#)
            let closed = try await CLI.run("/bin/sh", ["-c", "\"$0\" sync -v >&- 2>&-", CLI.tidemark], in: mirror)
            #expect(closed.status == 0)
            // A thread started early took a closed stdout's number in some runs (1 in 8), and the
            // summary then failed to be written there.
            let loop = "for i in $(seq 20); do \"$0\" log >&- || echo \"run $i: $?\" >&2; done"
            let runs = try await CLI.run("/bin/sh", ["-c", loop, CLI.tidemark], in: mirror)
            #expect(runs.stderr.isEmpty, "\(runs.stderr)")
            #expect(try await CLI.git(["status", "--porcelain"], in: mirror) == "")
            #expect(try String(contentsOfFile: mirror + "/items/i2.json", encoding: .utf8).contains(#""v": 2"#))
            _ = try await CLI.git(["fsck", "--strict"], in: mirror)
        }
    }

/// What the documents say of particular outputs, checked one by one.
@Suite("End to end: outputs as the documents describe them")
struct DocumentedOutputTests {
    /// A new item whose file a killed sync already wrote (it is in the index) is one line, the
    /// item's, edited locally (OutputFormats: "the files it already wrote show as modified"):
    /// not "untracked", and not again as a path that is no item.
    @Test func aNewItemAKilledSyncWroteIsOneLineEditedLocally() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(1, in: root)
            try writeItem(upstream, "n", lastModified: "2030-01-01T00:00:00Z")
            let killed = try await CLI.tidemark(["sync"], in: mirror, environment: ["TIDEMARK_CRASH_AT": "after-checkout"])
            #expect(killed.signalled, "\(killed.stderr)")
            let porcelain = try await CLI.tidemark(["status", "--porcelain"], in: mirror)
            // The manifest: written by the killed sync (local M), and changed upstream (M).
            #expect(porcelain.stdout == "AM items/n\nMM .tidemark/items.manifest\n", "\(porcelain.stdout)")
            #expect(try await CLI.tidemark(["sync"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
        }
    }

    /// Items come sorted by collection and id bytes, whatever order the collections were named in.
    @Test func itemsAreSortedByCollectionThenId() async throws {
        try await withScratch { root in
            for collection in ["a", "b"] {
                try FileManager.default.createDirectory(atPath: root + "/up/\(collection)", withIntermediateDirectories: true)
                try writeItem(root + "/up/\(collection)", "old", lastModified: "2026-01-01T00:00:00Z")
            }
            #expect(try await CLI.tidemark(["clone", "dir:up", "m", "--collection", "b", "--collection", "a"], in: root).status == 0)
            for collection in ["b", "a"] { try writeItem(root + "/up/\(collection)", "new", lastModified: "2026-02-01T00:00:00Z") }
            #expect(try await CLI.tidemark(["fetch", "-q"], in: root + "/m").status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: root + "/m").stdout == "A  a/new\nA  b/new\n")
        }
    }

    /// A collection with no items has no watermark: `log --json` leaves the field out, as it
    /// leaves out every null, where the commit's trailer says `none` (and `log` prints it).
    @Test func anEmptyCollectionHasNoWatermarkInTheLog() async throws {
        try await withScratch { root in
            for collection in ["a", "b"] {
                try FileManager.default.createDirectory(atPath: root + "/up/\(collection)", withIntermediateDirectories: true)
            }
            try writeItem(root + "/up/a", "one", lastModified: "2026-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m", "--collection", "a", "--collection", "b"], in: root).status == 0)
            let log = try await CLI.tidemark(["log", "--json"], in: root + "/m")
            let snapshots = try JSONSerialization.jsonObject(with: Data(log.stdout.utf8)) as? [[String: Any]]
            let marks = snapshots?.first?["collections"] as? [[String: Any]]
            #expect(marks?.count == 2 && marks?[0]["watermark"] as? String != nil, "\(log.stdout)")
            #expect(marks?.count == 2 && marks?[1]["name"] as? String == "b" && marks?[1]["watermark"] == nil, "\(log.stdout)")
            #expect(try await CLI.tidemark(["log"], in: root + "/m").stdout.contains("Watermark: b none\n"))
        }
    }

    /// `previous` and `current` are left out only when null: a sync with nothing to do names the
    /// commit the branch stays at.
    @Test func aFreshSyncNamesTheBranchTip() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(1, in: root)
            let tip = try await CLI.git(["rev-parse", "HEAD"], in: mirror).trimmingCharacters(in: .whitespacesAndNewlines)
            let fresh = try await CLI.tidemark(["sync", "--if-stale", "1h", "--json"], in: mirror)
            let json = try JSONSerialization.jsonObject(with: Data(fresh.stdout.utf8)) as? [String: Any]
            #expect(json?["outcome"] as? String == "fresh" && json?["previous"] as? String == tip && json?["current"] as? String == tip,
                    "\(fresh.stdout)")
        }
    }

    /// `diff --color` colours a patch as `git diff --color` does; `--no-color` and a pipe leave it plain.
    @Test func diffColoursItsPatchLikeGit() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(1, in: root)
            try writeItem(upstream, "i1", lastModified: "2030-01-01T00:00:00Z", extra: #", "v": 2"#)
            #expect(try await CLI.tidemark(["fetch", "-q"], in: mirror).status == 0)
            let colored = try await CLI.tidemark(["diff", "--color"], in: mirror).stdout
            for line in ["\u{1B}[1mdiff --git a/items/i1.json b/items/i1.json\u{1B}[m", "\u{1B}[36m@@ -1,5 +1,6 @@\u{1B}[m"] {
                #expect(colored.contains(line + "\n"), "\(line.debugDescription) in \(colored.debugDescription)")
            }
            #expect(colored.contains("\n\u{1B}[32m+") && colored.contains("\n\u{1B}[31m-"), "\(colored.debugDescription)")
            let plain = try await CLI.tidemark(["diff"], in: mirror).stdout
            let uncolored = try await CLI.tidemark(["diff", "--no-color"], in: mirror).stdout
            #expect(!plain.contains("\u{1B}") && uncolored == plain)
            #expect(colored.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression) == plain)
        }
    }

    /// `diff -- <path>` takes paths from the current folder, as git does (`:/` from the top), and
    /// patterns; item names (`collection/id`) work from anywhere.
    @Test func diffPathsAreTakenFromTheCurrentFolder() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(3, in: root)
            for id in ["i1", "i2"] { try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/\(id).json")) }
            let items = mirror + "/items"
            for (arguments, directory, shown) in [
                (["--", "i1.json"], items, "M\titems/i1.json\n"),
                (["--", "."], items, "M\titems/i1.json\nM\titems/i2.json\n"),
                (["--", ":/items/i2.json"], items, "M\titems/i2.json\n"),
                (["--", "items/i2"], items, "M\titems/i2.json\n"),
                (["--", "../items/./i2.json"], items, "M\titems/i2.json\n"),
                (["--", "items/i1.json"], mirror, "M\titems/i1.json\n"),
                // Patterns, as git matches them (they matched nothing).
                (["--", "*.json"], mirror, "M\titems/i1.json\nM\titems/i2.json\n"),
                (["--", "i[2]*"], items, "M\titems/i2.json\n"),
            ] {
                let diff = try await CLI.tidemark(["diff", "--name-status", "HEAD"] + arguments, in: directory)
                #expect(diff.status == 0 && diff.stdout == shown, "\(arguments) in \(directory): \(diff.stdout) \(diff.stderr)")
            }
            let absolute = try await CLI.tidemark(["diff", "--name-status", "HEAD", "--", items + "/i2.json"], in: items)
            #expect(absolute.stdout == "M\titems/i2.json\n", "\(absolute.stdout) \(absolute.stderr)")
            let viaC = try await CLI.tidemark(["-C", "m/items", "diff", "--name-status", "HEAD", "--", "i2.json"], in: root)
            #expect(viaC.stdout == "M\titems/i2.json\n", "\(viaC.stdout) \(viaC.stderr)")
            let outside = try await CLI.tidemark(["diff", "HEAD", "--", "../../x"], in: items)
            #expect(outside.status == 128 && outside.stderr == "fatal: '../../x' is outside the mirror\n", "\(outside.stderr)")

            // As in git, files after two revisions are paths without `--` (a usage error before),
            // options after them still options; one that is neither is named.
            try await CLI.git(["-c", "user.name=U", "-c", "user.email=u@example.org", "commit", "-qam", "Mine"], in: mirror)
            let two = try await CLI.tidemark(["diff", "--name-status", "HEAD~1", "HEAD", "i2.json", "--stat"], in: items)
            #expect(two.status == 0 && two.stdout.contains("items/i2.json") && !two.stdout.contains("i1.json"), "\(two.stdout) \(two.stderr)")
            let neither = try await CLI.tidemark(["diff", "HEAD~1", "HEAD", "i2.json", "nosuch"], in: items)
            #expect(neither.status == 128 && neither.stderr == "fatal: ambiguous argument 'nosuch': unknown revision or path not in the "
                        + "working tree; give items or paths after --, as: tidemark diff HEAD~1 HEAD -- i2.json nosuch\n", "\(neither.stderr)")
            // Three revisions (git's combined diff) are named as such, not as "neither".
            let three = try await CLI.tidemark(["diff", "HEAD~1", "HEAD", "HEAD"], in: items)
            #expect(three.status == 128 && three.stderr.hasPrefix("fatal: diff takes at most two revisions, and 'HEAD' is a third"),
                    "\(three.stderr)")
            // A path alone with no file (an item new upstream has none yet) is said as git says
            // it (it was an "unknown revision"), and after `--` it is one.
            let alone = try await CLI.tidemark(["diff", "items/i9.json"], in: mirror)
            #expect(alone.status == 128 && alone.stderr == "fatal: ambiguous argument 'items/i9.json': unknown revision or path not in the "
                        + "working tree; give items or paths after --, as: tidemark diff -- items/i9.json\n", "\(alone.stderr)")
            #expect(try await CLI.tidemark(["diff", "--", "items/i9.json"], in: mirror).status == 0)
        }
    }

    /// A diff between snapshots honours attributes as git does (`-diff` in `.git/info/attributes`
    /// and in a `.gitattributes` of the working tree), though it is made without reading the
    /// index for them.
    @Test func aDiffBetweenSnapshotsHonoursAttributes() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(3, in: root)
            for id in ["i1", "i2", "i3"] { try writeItem(upstream, id, lastModified: "2022-01-01T00:00:00Z", extra: #", "v": 2"#) }
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            try Data("items/i1.json -diff\n".utf8).write(to: URL(fileURLWithPath: mirror + "/.git/info/attributes"))
            try Data("i2.json -diff\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/.gitattributes"))
            for arguments in [["HEAD~1", "HEAD"], ["--stat", "HEAD~1", "HEAD"]] {
                let diff = try await CLI.tidemark(["diff"] + arguments, in: mirror)
                #expect(diff.stdout == (try await CLI.git(["diff"] + arguments, in: mirror)), "\(arguments): \(diff.stdout)")
            }
            let patch = try await CLI.tidemark(["diff", "HEAD~1", "HEAD"], in: mirror).stdout
            #expect(patch.contains("Binary files a/items/i1.json and b/items/i1.json differ")
                    && patch.contains("Binary files a/items/i2.json and b/items/i2.json differ") && patch.contains("+  \"v\": 2"), "\(patch)")
            // With no `.gitattributes` in the working tree the patches are made without one (no
            // folder resolved per file): `info/attributes` still counts, and a `.gitattributes`
            // at the top or in a folder on a file's way brings the working tree back.
            try FileManager.default.removeItem(atPath: mirror + "/items/.gitattributes")
            for attributes in [nil, "/.gitattributes", "/items/.gitattributes"] {
                if let attributes { try Data("i3.json -diff\n*/i3.json -diff\n".utf8).write(to: URL(fileURLWithPath: mirror + attributes)) }
                for arguments in [["HEAD~1", "HEAD"], ["--stat", "HEAD~1", "HEAD"]] {
                    let diff = try await CLI.tidemark(["diff"] + arguments, in: mirror)
                    #expect(diff.stdout == (try await CLI.git(["diff"] + arguments, in: mirror)), "\(attributes ?? "-") \(arguments): \(diff.stdout)")
                }
                let json = try await CLI.tidemark(["diff", "--json", "HEAD~1", "HEAD"], in: mirror).stdout
                let files = (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["files"] as? [[String: Any]]
                let i3 = files?.first { $0["path"] as? String == "items/i3.json" }
                #expect(i3?["item"] as? String == "items/i3" && ((i3?["added"] as? Int ?? 0) > 0) == (attributes == nil), "\(json)")
                let binary = try await CLI.tidemark(["diff", "HEAD~1", "HEAD"], in: mirror).stdout
                #expect(binary.contains("Binary files a/items/i1.json and b/items/i1.json differ")
                        && !binary.contains("Binary files a/items/i2.json")
                        && binary.contains("Binary files a/items/i3.json") == (attributes != nil), "\(attributes ?? "-"): \(binary)")
                if let attributes { try FileManager.default.removeItem(atPath: mirror + attributes) }
            }
        }
    }

    /// A file whose mode changed in the index alone (its contents and the working tree's mode
    /// as HEAD has them): no patch, as `git diff HEAD` prints none (a bare header was printed).
    @Test func aModeChangedInTheIndexAloneHasNoPatch() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(2, in: root)
            try await CLI.git(["update-index", "--chmod=+x", "items/i1.json"], in: mirror)
            let diff = try await CLI.tidemark(["diff", "HEAD"], in: mirror)
            let gits = try await CLI.git(["diff", "HEAD"], in: mirror)
            #expect(diff.status == 0 && diff.stdout == gits, "\(diff.stdout)")
        }
    }

    /// Names holding a space end their `---`/`+++` lines with a TAB, as git writes them; a
    /// working-tree file put back to the revision's contents (and mode) is no difference,
    /// whatever the index says (libgit2 listed it, `--exit-code` exited 1).
    @Test func diffMatchesGitForSpacesInNamesAndFilesPutBack() async throws {
        try await withScratch { root in
            try FileManager.default.createDirectory(atPath: root + "/up", withIntermediateDirectories: true)
            try writeItem(root + "/up", "a", lastModified: "2024-01-01T00:00:00Z")
            #expect(try await CLI.tidemark(["clone", "-q", "dir:up", "m"], in: root).status == 0)
            let mirror = root + "/m"
            let script = """
                set -e; c() { git -c user.name=u -c user.email=e commit -q "$@"; }
                printf 'x\\n' > 'sp ace.txt'; printf 'y\\n' > $'caf\\303\\251 s.txt'; echo 'echo hi' > run.sh; echo one > f.txt
                printf 'a\\0b\\n' > bin.dat; : > empty1; echo '*.bin -diff' > .gitattributes; : > e.bin; echo x > m.bin
                git add -A; c -m own1
                printf 'x2\\n' > 'sp ace.txt'; rm $'caf\\303\\251 s.txt'; chmod +x run.sh; echo two > f.txt; printf 'zz\\0b\\n' > bin.dat
                rm empty1 e.bin; : > 'empty 2.txt'; chmod +x m.bin
                git add -A; c -m own2
                chmod -x run.sh; echo one > f.txt; printf 'a\\0b\\n' > bin.dat
                : > ita.txt; git add -N ita.txt
                """
            #expect(try await CLI.run("/bin/bash", ["-c", script], in: mirror).status == 0)
            for arguments in [["HEAD~1", "HEAD"], ["HEAD~2", "HEAD"], ["--name-status", "HEAD~1"], ["--numstat", "HEAD~1"], ["HEAD~1"], ["HEAD"]] {
                let ours = try await CLI.tidemark(["diff"] + arguments, in: mirror)
                // `tidemark diff` finds no renames (git pairs the empty files deleted and added).
                let theirs = try await CLI.run("/usr/bin/git", ["diff", "--no-renames"] + arguments, in: mirror)
                #expect(ours.stdout == theirs.stdout && ours.status == 0, "\(arguments): \(ours.stdout) vs \(theirs.stdout)")
            }
            #expect(try await CLI.tidemark(["diff", "HEAD~1", "HEAD"], in: mirror).stdout.contains("+++ b/sp ace.txt\t\n"))
            // Put back: only the files that still differ from own1 are listed, and none from own2's
            // version of run.sh and f.txt.
            #expect(try await CLI.tidemark(["diff", "--name-only", "HEAD~1"], in: mirror).stdout
                    == "\"caf\\303\\251 s.txt\"\ne.bin\nempty 2.txt\nempty1\nita.txt\nm.bin\nsp ace.txt\n")
            #expect(try await CLI.tidemark(["diff", "--name-status", "HEAD"], in: mirror).stdout == "M\tbin.dat\nM\tf.txt\nA\tita.txt\nM\trun.sh\n")
            // An empty file added or deleted: no `---`/`+++` lines, as git writes it (libgit2 wrote
            // them), nor a `Binary files` line for one binary by its attributes, nor for one whose
            // mode alone changed.
            let deletions = try await CLI.tidemark(["diff", "HEAD~1", "HEAD"], in: mirror).stdout
            #expect(!deletions.contains("--- a/empty1") && !deletions.contains("Binary files a/e.bin")
                    && deletions.contains("new mode 100755") && !deletions.contains("Binary files a/m.bin"), "\(deletions)")
            try await CLI.git(["checkout", "HEAD~1", "--", "sp ace.txt", "caf\u{e9} s.txt", "empty1", "e.bin", "m.bin"], in: mirror)
            try await CLI.git(["rm", "-q", "--cached", "empty 2.txt", "ita.txt"], in: mirror)
            for file in ["empty 2.txt", "ita.txt"] { try FileManager.default.removeItem(atPath: mirror + "/" + file) }
            let exit = try await CLI.tidemark(["diff", "--exit-code", "HEAD~1"], in: mirror)
            #expect(exit.status == 0 && exit.stdout.isEmpty, "\(exit.stdout)")
            #expect(try await CLI.run("/usr/bin/git", ["diff", "--exit-code", "HEAD~1"], in: mirror).status == 0)
        }
    }

    /// Files git skips in the working tree (outside a sparse checkout's patterns, marked
    /// skip-worktree and removed) are no change to `diff`, as to `git diff` and to `status`: they
    /// were all listed as deleted, and `--exit-code` exited 1.
    @Test func diffLeavesOutWhatGitSkipsInTheWorkingTree() async throws {
        try await withScratch { root in
            let (_, mirror) = try await CrashTests.cloned(4, in: root)
            try await CLI.git(["sparse-checkout", "set", "--no-cone", "/items/i1.json", "/.tidemark/"], in: mirror)
            #expect(!FileManager.default.fileExists(atPath: mirror + "/items/i2.json"))
            try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/i1.json"))
            for arguments in [["--name-status", "HEAD"], ["--stat", "HEAD"], ["--name-status", "HEAD", "--", ":!items/i1.json"]] {
                let diff = try await CLI.tidemark(["diff"] + arguments, in: mirror)
                #expect(diff.stdout == (try await CLI.git(["diff"] + arguments, in: mirror)), "\(arguments): \(diff.stdout)")
            }
            #expect(try await CLI.tidemark(["diff", "--name-status", "HEAD"], in: mirror).stdout == "M\titems/i1.json\n")
            try await CLI.git(["checkout", "--", "items/i1.json"], in: mirror)
            #expect(try await CLI.tidemark(["diff", "--exit-code", "HEAD"], in: mirror).status == 0)
            #expect(try await CLI.tidemark(["status", "--porcelain"], in: mirror).stdout == "")
            try await CLI.git(["sparse-checkout", "disable"], in: mirror)
            // One file marked by hand and removed: the same.
            try await CLI.git(["update-index", "--skip-worktree", "items/i3.json"], in: mirror)
            try FileManager.default.removeItem(atPath: mirror + "/items/i3.json")
            let marked = try await CLI.tidemark(["diff", "--exit-code", "--name-status", "HEAD"], in: mirror)
            #expect(marked.status == 0 && marked.stdout.isEmpty, "\(marked.stdout)")
        }
    }

    /// Pathspec magic (`:!`, `:(glob)`, `:(icase)`, ...) as git takes it, on the working tree and
    /// between snapshots, beside item names: it was taken as a file name and matched nothing,
    /// exit 0, so `diff -- . ':!x'` said nothing changed.
    @Test func diffTakesPathspecMagicAsGitDoes() async throws {
        try await withScratch { root in
            let (upstream, mirror) = try await CrashTests.cloned(4, in: root)
            for id in ["i1", "i2", "i3"] { try writeItem(upstream, id, lastModified: "2022-01-01T00:00:00Z", extra: #", "v": 2"#) }
            #expect(try await CLI.tidemark(["sync", "-q"], in: mirror).status == 0)
            for id in ["i2", "i4"] { try Data("{\"mine\": 1}\n".utf8).write(to: URL(fileURLWithPath: mirror + "/items/\(id).json")) }
            let items = mirror + "/items"
            for (revisions, arguments, directory) in [
                (["HEAD"], [":!items/i2.json"], mirror), (["HEAD"], [".", ":^i4.json"], items), (["HEAD~1", "HEAD"], [":(exclude)*.manifest"], mirror),
                (["HEAD~1", "HEAD"], [":(glob)*"], mirror), (["HEAD~1", "HEAD"], [":(glob)items/*", ":!items/i1.json"], mirror),
                (["HEAD~1", "HEAD"], [":(icase)ITEMS/I3.JSON", ":/.tidemark"], items), (["HEAD~1", "HEAD"], [":(glob)**/i[12].json"], items),
                (["HEAD~1", "HEAD"], [":(literal)i*"], items), (["HEAD~1", "HEAD"], [":/!items"], items),
            ] {
                let expected = try await CLI.git(["diff", "--name-status"] + revisions + ["--"] + arguments, in: directory)
                let diff = try await CLI.tidemark(["diff", "--name-status"] + revisions + ["--"] + arguments, in: directory)
                #expect(diff.status == 0 && diff.stdout == expected, "\(revisions) \(arguments) in \(directory): \(diff.stdout) \(diff.stderr)")
            }
            // Item names stay item names beside magic; nothing kept is an empty diff.
            let named = try await CLI.tidemark(["diff", "--name-status", "HEAD~1", "HEAD", "--", "items/i1", ":!items/i3.json"], in: mirror)
            #expect(named.stdout == "M\titems/i1.json\n", "\(named.stdout) \(named.stderr)")
            let none = try await CLI.tidemark(["diff", "--exit-code", "HEAD~1", "HEAD", "--", ":(glob)*.json"], in: mirror)
            #expect(none.status == 0 && none.stdout.isEmpty, "\(none.stdout) \(none.stderr)")
            let patch = try await CLI.tidemark(["diff", "HEAD", "--", ":!items/i4.json"], in: mirror)
            #expect(patch.stdout == (try await CLI.git(["diff", "HEAD", "--", ":!items/i4.json"], in: mirror)), "\(patch.stdout)")
            // An item's name under magic stands for its file (`:!items/i3` left items/i3.json in).
            let byName = try await CLI.tidemark(["diff", "--name-status", "HEAD~1", "HEAD", "--", "items", ":!items/i3"], in: mirror)
            #expect(byName.stdout == (try await CLI.git(["diff", "--name-status", "HEAD~1", "HEAD", "--", "items", ":!items/i3.json"], in: mirror)),
                    "\(byName.stdout)")
            #expect(byName.stdout.contains("items/i1.json") && !byName.stdout.contains("i3"), "\(byName.stdout)")
            let bad = try await CLI.tidemark(["diff", "HEAD", "--", ":(nope)x"], in: mirror)
            #expect(bad.status == 128 && bad.stderr == "fatal: invalid pathspec magic 'nope' in ':(nope)x'\n", "\(bad.stderr)")
            // An empty pathspec is refused, as git refuses it (it was the whole diff).
            let empty = try await CLI.tidemark(["diff", "HEAD", "--", ""], in: mirror)
            #expect(empty.status == 128 && empty.stderr.contains("empty string is not a valid pathspec"), "\(empty.stderr)")
            // Without `--`, a file after the revision is a path, as git takes it (two arguments at
            // most: more paths take `--`); a name that is neither is said as git says it.
            for (arguments, directory) in [(["HEAD~1", "items/i1.json"], mirror), (["HEAD~1", "i1.json"], items),
                                           (["HEAD~1", "items"], mirror)] {
                let expected = try await CLI.git(["diff", "--name-status"] + arguments, in: directory)
                let diff = try await CLI.tidemark(["diff", "--name-status"] + arguments, in: directory)
                #expect(diff.status == 0 && diff.stdout == expected && !expected.isEmpty, "\(arguments): \(diff.stdout) \(diff.stderr)")
            }
            let unknown = try await CLI.tidemark(["diff", "HEAD", "nosuch.json"], in: mirror)
            #expect(unknown.status == 128 && unknown.stderr == "fatal: ambiguous argument 'nosuch.json': unknown revision or path not in "
                        + "the working tree; give items or paths after --, as: tidemark diff HEAD -- nosuch.json\n", "\(unknown.stderr)")
            // Globs and magic without `--` are paths too, as git takes them (they were unknown revisions).
            for pattern in ["items/*.json", ":!items/i2.json", ":(glob)items/i[12].json", ":/items/i1.json"] {
                let expected = try await CLI.git(["diff", "--name-status", "HEAD~1", pattern], in: mirror)
                let diff = try await CLI.tidemark(["diff", "--name-status", "HEAD~1", pattern], in: mirror)
                #expect(diff.status == 0 && diff.stdout == expected && !expected.isEmpty, "\(pattern): \(diff.stdout) \(diff.stderr)")
            }
            // Before `--` an argument is a revision, as git says; and one beside a revision gets
            // no spelled-out command that would make that revision a path.
            let beforeDashes = try await CLI.tidemark(["diff", "HEAD~9", "--", "items"], in: mirror)
            #expect(beforeDashes.status == 128 && beforeDashes.stderr == "fatal: unknown revision 'HEAD~9'\n", "\(beforeDashes.stderr)")
            let beside = try await CLI.tidemark(["diff", "HEAD~9", "HEAD"], in: mirror)
            #expect(beside.status == 128 && beside.stderr == "fatal: ambiguous argument 'HEAD~9': unknown revision or path not in the "
                        + "working tree; give items or paths after --, as: tidemark diff [<revision>...] -- [<path>...]\n", "\(beside.stderr)")
        }
    }
}
