import ArgumentParser
import Foundation
import Tidemark

/// `tidemark`: the root command.
struct TidemarkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tidemark",
        abstract: "Mirror a remote collection into a git repository, and tell which cached items are behind upstream.",
        discussion: """
            A mirror is a git repository whose working tree caches an upstream collection
            (a folder of JSON files, DocuSign templates, WordPress posts, a JSON REST
            collection). Every sync is a commit; plain git (git log, git diff, tig) reads
            the history.

            Exit status: 0 on success, 1 when a command refuses (local edits),
            --exit-code finds differences, or there is nothing to show (an unset config
            key, no watcher running, no command given), 128 for errors (printed as
            'fatal: ...'), 129 for usage errors.

            Examples:
              tidemark clone dir:./templates cache
              tidemark -C cache status
              tidemark help sync
              tidemark --generate-completion-script bash > /etc/bash_completion.d/tidemark
            """,
        version: "0.1.0",
        subcommands: [Clone.self, Fetch.self, Status.self, DiffCommand.self, Sync.self, Log.self, List.self, Rollback.self, Config.self, Watch.self]
    )

    @Option(name: .customShort("C", allowingJoined: true), help: ArgumentHelp("Run as if tidemark was started in <path>; several are taken in turn, "
                                                        + "each relative to the one before, as git takes them.", valueName: "path"),
            completion: .directory)
    var directories: [String] = []

    /// Where `-C` options lead, or nil without any: each relative to the one before (an empty
    /// one changes nothing), as `git -C a -C b` means `a/b`.
    var directory: String? {
        directories.reduce(nil as String?) { current, next in
            next.isEmpty ? current : next.hasPrefix("/") || current == nil ? next : current! + "/" + next
        }
    }

    /// Parses the command line, runs the command, and exits like git does.
    static func runMain() async {
        // A closed pipe is an error of the write, not a signal: a sync goes on when its stderr
        // (progress, -v) is closed, whichever thread writes; stdout's end is handled in `emit`.
        signal(SIGPIPE, SIG_IGN)
        do {
            // Swift reads arguments as UTF-8, putting U+FFFD for other bytes: a path so changed
            // would name another file (a clone created a folder of another name). Refused instead.
            for index in 1..<Int(CommandLine.argc) {
                guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
                let bytes = Array(UnsafeRawBufferPointer(start: raw, count: strlen(raw)))
                writeStandardError("error: argument \(Quoting.cQuoted(bytes)) is not UTF-8: tidemark takes paths and names in UTF-8 only "
                                   + "(rename the file or folder)\n")
                exitProcess(129)
            }
            let arguments = Array(CommandLine.arguments.dropFirst())
            if let name = unknownHelpTopic(arguments) { throw notACommand(name) }
            var command: ParsableCommand
            do {
                command = try parseAsRoot(pathsAfterTwoRevisions(countingLikeGitLog(defaultingIfStale(arguments))))
            } catch {
                // `tidemark stauts`: argument-parser says only "Unexpected argument".
                if exitCode(for: error) != .success, let name = unknownCommand(arguments) { throw notACommand(name) }
                throw error
            }
            if command is TidemarkCommand {
                // No command: the help, and exit 1, as `git` alone does (`--help` exits 0).
                print(helpMessage())
                exitProcess(1)
            }
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as CommandFailure {
            failure.report()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                // --help and --version.
                print(fullMessage(for: error))
                exitProcess(0)
            }
            if error is ExitCode { exitProcess(code.rawValue) }
            // "error: ..." as git words a usage error (argument-parser says "Error: ...").
            var message = fullMessage(for: error)
            if message.hasPrefix("Error: ") { message = "error: " + message.dropFirst("Error: ".count) }
            writeStandardError(message + "\n")
            exitProcess(129)
        }
    }

    /// `--if-stale` without a duration (last, or before another option) means `--if-stale auto`:
    /// argument-parser options cannot have an optional value. A negative duration (`-1h`) is
    /// passed as its value, to be refused, not taken for the flags `-1 -h` (help, exit 0).
    static func defaultingIfStale(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return result + arguments[index...] }
            index += 1
            guard argument == "--if-stale" else {
                result.append(argument)
                continue
            }
            let next = index < arguments.count ? arguments[index] : nil
            if let next, next.hasPrefix("-"), next.dropFirst().first.map({ $0.isNumber || $0 == "." }) == true {
                result.append("--if-stale=" + next)
                index += 1
            } else {
                result.append(argument)
                if next == nil || next!.hasPrefix("-") { result.append("auto") }
            }
        }
        return result
    }

    /// Where the command name is in `arguments`: after the root options (`-C <path>` and flags).
    static func commandIndex(_ arguments: [String]) -> Int {
        var index = 0
        while index < arguments.count, arguments[index].hasPrefix("-"), arguments[index] != "--" {
            index += ["-C", "--generate-completion-script"].contains(arguments[index]) ? 2 : 1
        }
        return index
    }

    /// The name in `tidemark help <name>` when it is no command (argument-parser prints the
    /// general help for it, and exits 0, as if it were asked for).
    static func unknownHelpTopic(_ arguments: [String]) -> String? {
        let index = commandIndex(arguments)
        guard index + 1 < arguments.count, arguments[index] == "help" else { return nil }
        let topic = arguments[index + 1]
        return topic.hasPrefix("-") || topic == "help" || commandNames.contains(topic) ? nil : topic
    }

    /// The error for `name` given as a command, with the command it is a typo of, if any.
    static func notACommand(_ name: String) -> ValidationError {
        let similar = commandNames.filter { editDistance($0, name) <= 2 }
        return ValidationError("'\(name)' is not a tidemark command" + (similar.isEmpty ? "." : "; did you mean '\(similar[0])'?")
                               + " The commands are: \(commandNames.joined(separator: ", "))")
    }

    /// The word where a command goes when it names none (`tidemark stauts`).
    static func unknownCommand(_ arguments: [String]) -> String? {
        let index = commandIndex(arguments)
        guard index < arguments.count else { return nil }
        let word = arguments[index]
        return word == "--" || word == "help" || commandNames.contains(word) ? nil : word
    }

    /// The number of single-character edits from `a` to `b` (Levenshtein), for a suggestion.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let b = Array(b)
        var row = Array(0...b.count)  // distances from the prefix of `a` read so far to each prefix of `b`
        for (i, x) in a.enumerated() {
            var next = [i + 1]
            for (j, y) in b.enumerated() { next.append(min(row[j + 1] + 1, next[j] + 1, row[j] + (x == y ? 0 : 1))) }
            row = next
        }
        return row[b.count]
    }

    /// The subcommands' names, as `tidemark help` lists them.
    static var commandNames: [String] { configuration.subcommands.map { $0._commandName } }

    /// `tidemark diff A B items/a.json`: as in git, operands after two revisions (before any
    /// `--`) are paths. argument-parser cannot take a list of positionals before the list after
    /// `--`, so each goes to `diff` as `--path-operand=<operand>` (every diff option is a flag).
    static func pathsAfterTwoRevisions(_ arguments: [String]) -> [String] {
        let index = commandIndex(arguments)
        guard index < arguments.count, arguments[index] == "diff" else { return arguments }
        var result = Array(arguments[...index])
        var operands = 0
        for (offset, argument) in arguments[(index + 1)...].enumerated() {
            if argument == "--" { return result + arguments[(index + 1 + offset)...] }
            if argument.hasPrefix("-"), argument != "-" {
                result.append(argument)
                continue
            }
            operands += 1
            result.append(operands > 2 ? "--path-operand=" + argument : argument)
        }
        return result
    }

    /// `log -<number>` means `log -n <number>`, as in git, and `-n -1` (a negative count: no
    /// limit) is a value, not an option. Items and paths after `--` go to `log` as
    /// `--log-path=<argument>` (argument-parser takes no operands after its list of revisions).
    static func countingLikeGitLog(_ arguments: [String]) -> [String] {
        let index = commandIndex(arguments)
        guard index < arguments.count, arguments[index] == "log" else { return arguments }
        var result = Array(arguments[...index])
        for (offset, argument) in arguments[(index + 1)...].enumerated() {
            if argument == "--" {
                return result + arguments[(index + 2 + offset)...].map { "--log-path=" + $0 }
            }
            if argument.count > 1, argument.hasPrefix("-"), argument.dropFirst().allSatisfy(\.isASCII),
               argument.dropFirst().allSatisfy(\.isNumber) {
                if result.count > index + 1, ["-n", "--max-count"].contains(result.last) {
                    result[result.count - 1] = "--max-count=" + argument
                } else {
                    result += ["-n", String(argument.dropFirst())]
                }
            } else {
                result.append(argument)
            }
        }
        return result
    }

    /// The mirror the command works on: the one containing `-C <path>` or the current folder.
    func openMirror() throws -> Mirror {
        try checkDirectory()
        // git takes the repository from GIT_DIR (its working tree from GIT_WORK_TREE, else the
        // current folder); tidemark finds its mirror from the working tree. One GIT_DIR names is
        // used when it is that mirror's; another is refused, not passed over in silence.
        let environment = ProcessInfo.processInfo.environment
        let gitDir = environment["GIT_DIR"].flatMap { $0.isEmpty ? nil : path($0) }
        let workTree = environment["GIT_WORK_TREE"].flatMap { $0.isEmpty ? nil : path($0) }
        let mirror: Mirror
        do {
            mirror = try Mirror.open(at: (gitDir == nil ? nil : workTree) ?? directory ?? Mirror.currentDirectory)
        } catch {
            guard let gitDir else { throw CommandFailure.fatal(error.description) }
            throw CommandFailure.fatal(error.description + "; GIT_DIR is set ('\(gitDir)'), but tidemark finds a mirror from its "
                                       + "working tree (-C, GIT_WORK_TREE or the current folder): run it there, or unset GIT_DIR")
        }
        if let gitDir, Self.canonicalPath(Self.followingGitFile(gitDir)) != Self.canonicalPath(mirror.gitDirectory) {
            throw CommandFailure.fatal("GIT_DIR is set ('\(gitDir)') to another repository than the mirror at '\(mirror.workingTree)' "
                                       + "(whose git folder is '\(mirror.gitDirectory)'): unset GIT_DIR and GIT_WORK_TREE, "
                                       + "or point them at the mirror")
        }
        return mirror
    }

    /// The git folder `path` names: itself, or the one a `.git` file there points to (`gitdir:
    /// <path>`, relative to the file's folder), as git reads GIT_DIR.
    static func followingGitFile(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              let text = try? String(contentsOfFile: path, encoding: .utf8), text.hasPrefix("gitdir:") else { return path }
        let target = text.dropFirst("gitdir:".count).trimmingCharacters(in: .whitespacesAndNewlines)
        return target.hasPrefix("/") ? target : (path as NSString).deletingLastPathComponent + "/" + target
    }

    /// `path` with symbolic links and `.`/`..` resolved and no trailing slash (as given when it
    /// cannot be resolved), to compare two spellings of one folder.
    static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path.hasSuffix("/") ? String(path.dropLast()) : path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Fails as `git -C` does when `-C <path>` is not a folder that can be entered, and when the
    /// current folder's path, which a path is read against, is not UTF-8.
    func checkDirectory() throws {
        if directory?.hasPrefix("/") != true, let bytes = Mirror.currentDirectoryIfNotUTF8 {
            throw CommandFailure.fatal("the current folder's path is not UTF-8 ('\(Quoting.cQuoted(bytes))'): tidemark takes UTF-8 "
                                       + "paths only; run it from the mirror's top folder, or with -C and the mirror's full path")
        }
        guard let directory else { return }
        var info = stat()
        let named = Quoting.cQuoted(Array(directory.utf8))
        if stat(directory, &info) != 0 {
            throw CommandFailure.fatal("cannot change to '\(named)': \(String(cString: strerror(errno)))")
        }
        if info.st_mode & S_IFMT != S_IFDIR {
            throw CommandFailure.fatal("cannot change to '\(named)': \(String(cString: strerror(ENOTDIR)))")
        }
    }

    /// Resolves a user-given path against `-C`.
    func path(_ given: String) -> String {
        if given.hasPrefix("/") { return given }
        let base = directory.map { $0.hasPrefix("/") ? $0 : Mirror.currentDirectory + "/" + $0 }
            ?? Mirror.currentDirectory
        return base + "/" + given
    }
}

/// Ends the process with `code`, once the git library's set-up begun at the start
/// (``Entrypoint``) is over: exit handlers must not run while another thread is in it.
func exitProcess(_ code: Int32) -> Never {
    Mirror.finishPreparing()
    if code < 128, let failure = standardOutputFailure() {
        writeStandardError("fatal: \(failure)\n")
        Foundation.exit(128)
    }
    Foundation.exit(code)
}

/// How a command ends when it does not succeed: git's conventions.
enum CommandFailure: Error {
    /// `fatal: <message>` on stderr, exit 128.
    case fatal(String)
    /// `error: <message>` on stderr, exit 1 (a refusal, like git's "would be overwritten").
    case refused(String)
    /// Exit with `code` and no message (e.g. `--exit-code`).
    case silent(Int32)

    func report() -> Never {
        switch self {
        case .fatal(let message):
            writeStandardError("fatal: \(terminalSafe(message))\n")
            exitProcess(128)
        case .refused(let message):
            writeStandardError("error: \(terminalSafe(message))\n")
            exitProcess(1)
        case .silent(let code):
            exitProcess(code)
        }
    }

    /// Maps an engine error to git's exit codes: refusals exit 1, everything else 128.
    init(_ error: MirrorError) {
        switch error {
        case .localEdits, .unmergedFiles, .operationInProgress, .massDeletion, .droppedCollection, .ownCommits, .unrelatedBranch, .lostBranch, .indexMissing:
            self = .refused(error.description)
        default: self = .fatal(error.description)
        }
    }
}

/// ``engine(_:)`` for the commands that first finish a sync a killed run had left (`fetch`, `sync`,
/// `rollback`): once the call returns or fails, and `settle` has erased any progress line, tells
/// so on stderr (``tellFinishedInterruptedSync(of:_:)``), so a failure after that recovery hides nothing.
func engine<R>(on mirror: Mirror, _ output: OutputOptions, settle: () -> Void = {},
               _ body: () async throws(MirrorError) -> R) async throws(CommandFailure) -> R {
    let outcome: Result<R, MirrorError>
    do {
        outcome = .success(try await body())
    } catch {
        outcome = .failure(error)
    }
    settle()
    await tellFinishedInterruptedSync(of: mirror, output)
    return try await engine { () throws(MirrorError) in try outcome.get() }
}

/// Runs an engine call, mapping its errors to ``CommandFailure``.
func engine<R>(_ body: () async throws(MirrorError) -> R) async throws(CommandFailure) -> R {
    do {
        return try await body()
    } catch {
        throw CommandFailure(error)
    }
}
