import Foundation
import Testing

@Suite("End to end: help with examples, shell completions")
struct HelpTests {
    static let commands = ["clone", "fetch", "status", "diff", "sync", "log", "ls", "rollback", "config"]

    @Test(arguments: commands)
    func helpShowsExamples(_ command: String) async throws {
        let help = try await CLI.tidemark(["help", command], in: NSTemporaryDirectory())
        #expect(help.status == 0, "\(help.stderr)")
        let lines = help.stdout.components(separatedBy: "\n")
        let header = try #require(lines.firstIndex { $0.trimmingCharacters(in: .whitespaces) == "Examples:" },
                                  "no Examples: in help \(command)")
        let examples = lines[(header + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(!examples.isEmpty)
        #expect(examples.contains { $0.contains("tidemark \(command)") }, "\(examples)")
        #expect(help.stdout.contains("USAGE: tidemark \(command)"))
    }

    /// `help` of a name that is no command is a usage error naming the commands (it printed the
    /// general help and exited 0); so is the name run as a command (argument-parser said only
    /// "Unexpected argument"), with the command it is a typo of.
    /// An argument that is not UTF-8 is refused, named in octal: Swift read it with U+FFFD, and
    /// a clone created a folder of another name. A `-C` with a line break is named escaped.
    @Test func argumentsThatAreNotUTF8AreRefusedByName() async throws {
        try await withScratch { root in
            let clone = try await CLI.run("/bin/sh", ["-c", "\"$0\" clone -q dir:up \"$(printf 'dst\\377')\"", CLI.tidemark], in: root)
            #expect(clone.status == 129 && clone.stderr == "error: argument \"dst\\377\" is not UTF-8: tidemark takes paths and names "
                    + "in UTF-8 only (rename the file or folder)\n", "\(clone.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
            // Nor is a current folder whose path is not: it was read with U+FFFD, naming no folder.
            let inside = try await CLI.run("/bin/sh", ["-c", "mkdir \"$(printf 'd\\377')\" && cd \"$(printf 'd\\377')\" && \"$0\" status",
                                                       CLI.tidemark], in: root)
            #expect(inside.status == 128 && inside.stderr.contains("the current folder's path is not UTF-8 ('\"\(root)/d\\377\"')"),
                    "\(inside.stderr)")
            let folder = try await CLI.tidemark(["-C", "m\nnl", "status"], in: root)
            #expect(folder.status == 128 && folder.stderr == "fatal: cannot change to '\"m\\nnl\"': No such file or directory\n", "\(folder.stderr)")
        }
    }

    @Test func anUnknownCommandIsAUsageErrorNamingTheCommands() async throws {
        for (arguments, name, suggestion) in [(["help", "nosuch"], "nosuch", "."), (["nosuch"], "nosuch", "."),
                                              (["stauts"], "stauts", "; did you mean 'status'?"), (["-C", "/", "snyc", "-q"], "snyc", "; did you mean 'sync'?")] {
            let help = try await CLI.tidemark(arguments, in: NSTemporaryDirectory())
            #expect(help.status == 129 && help.stdout.isEmpty, "\(help.stdout)")
            #expect(help.stderr.hasPrefix("error: '\(name)' is not a tidemark command\(suggestion) The commands are: clone, fetch, status, diff, sync"),
                    "\(help.stderr)")
        }
    }

    /// Two output formats at once are refused (JSON was printed, the other left out silently).
    @Test func statusTakesOneFormat() async throws {
        for (flags, named) in [(["--json", "--porcelain"], "--porcelain"), (["--json", "-z"], "-z")] {
            let status = try await CLI.tidemark(["status"] + flags, in: NSTemporaryDirectory())
            #expect(status.status == 129 && status.stdout.isEmpty
                    && status.stderr.hasPrefix("error: --json cannot be used together with \(named): choose one format"), "\(status.stderr)")
        }
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptGenerates(_ shell: String) async throws {
        let script = try await CLI.tidemark(["--generate-completion-script", shell], in: NSTemporaryDirectory())
        #expect(script.status == 0, "\(script.stderr)")
        for command in Self.commands { #expect(script.stdout.contains(command)) }
        #expect(script.stdout.contains("if-stale") && script.stdout.contains("progress"))
    }

    /// `-C` completes folders, `clone --fanout` its three values (neither completed anything).
    @Test func optionValuesComplete() async throws {
        let script = try await CLI.tidemark(["--generate-completion-script", "bash"], in: NSTemporaryDirectory())
        #expect(script.stdout.contains("    '-C')\n        __tidemark_add_completions -d\n"), "\(script.stdout)")
        #expect(script.stdout.contains("    '--fanout')\n        __tidemark_add_completions -W 'auto'$'\\n''true'$'\\n''false'\n"))
    }

    /// A shell argument-parser has no script for is named as such, not as an unknown command.
    @Test func anUnknownShellIsNamed() async throws {
        let script = try await CLI.tidemark(["--generate-completion-script", "tcsh"], in: NSTemporaryDirectory())
        #expect(script.status == 129 && script.stderr.hasPrefix("error: Can't generate completion scripts for 'tcsh'."), "\(script.stderr)")
    }

    @Test func bashCompletionScriptIsValidBash() async throws {
        let script = try await CLI.tidemark(["--generate-completion-script", "bash"], in: NSTemporaryDirectory())
        let path = NSTemporaryDirectory() + "tidemark-completion-\(UUID().uuidString).bash"
        try Data(script.stdout.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let check = try await CLI.run("/bin/bash", ["-n", path], in: NSTemporaryDirectory())
        #expect(check.status == 0, "\(check.stderr)")
    }
}
