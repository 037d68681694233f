import ArgumentParser
import Dispatch
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark watch`
    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Watch a dir upstream, so fetch and sync check only the files that changed.",
            discussion: """
                Runs until interrupted (Ctrl-C, SIGTERM, SIGHUP), or until its folder or its
                socket goes away (the mirror was removed). While it runs, 'tidemark
                fetch' and 'tidemark sync' in this mirror ask it which files changed since
                their last run, over .git/tidemark/watch.sock, and check only those instead of
                every file of the folder (as git's fsmonitor spares 'git status' its scan).
                Without it, or when it lost track (it restarted, a folder was created, removed
                or renamed, its queue overflowed), they scan every file, as always; and they do
                at least once an hour anyway. 'fetch -v' says which it did. Linux only (inotify).

                Examples:
                  tidemark watch &
                  tidemark sync -v
                  tidemark watch --status
                  tidemark watch --stop
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Flag(help: "Say whether a watcher runs for this mirror (exit 1 when none does).")
        var status = false

        @Flag(help: "Stop the watcher of this mirror (exit 1 when none runs).")
        var stop = false

        func validate() throws {
            if status && stop { throw ValidationError("--status and --stop cannot be used together") }
        }

        func run() async throws {
            let mirror = try root.openMirror()
            if status {
                guard let running = await mirror.runningWatcher() else {
                    emit("No watcher runs for this mirror.\n")
                    throw CommandFailure.silent(1)
                }
                let pid = running.pid.map { " (pid \($0))" } ?? ""
                if let folder = running.folder {
                    emit("A watcher runs for this mirror\(pid), watching \(folder).\n")
                } else {
                    emit("A watcher runs for this mirror\(pid) but does not answer yet: it is starting (walking the "
                         + "folder) or suspended.\n")
                }
                return
            }
            if stop {
                guard let pid = try await engine({ () throws(MirrorError) in try await mirror.stopWatcher() }) else {
                    throw CommandFailure.refused("no watcher runs for this mirror")
                }
                if !output.quiet { emit("Stopped the watcher (pid \(pid)).\n") }
                return
            }
            // Ctrl-C and the like end the watch through a pipe its loop polls, so it removes its socket.
            var pipeEnds: [Int32] = [0, 0]
            guard pipe(&pipeEnds) == 0 else { throw CommandFailure.fatal("cannot make a pipe: \(String(cString: strerror(errno)))") }
            let stopWrite = pipeEnds[1]
            let sources = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].compactMap { number -> DispatchSourceSignal? in
                // One the process was started ignoring (a script's background job's SIGINT,
                // nohup's SIGHUP) stays ignored, as for clone.
                let previous = signal(number, SIG_IGN)
                guard unsafeBitCast(previous, to: Int.self) != unsafeBitCast(SIG_IGN, to: Int.self) else { return nil }
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { _ = write(stopWrite, "x", 1) }
                source.resume()
                return source
            }
            defer { sources.forEach { $0.cancel() } }
            let quiet = output.quiet
            try await engine { () throws(MirrorError) in
                try await mirror.watch(stop: pipeEnds[0]) { started in
                    guard !quiet else { return }
                    writeStandardError("Watching \(started.folders) folder\(started.folders == 1 ? "" : "s") "
                                       + "(\(started.itemFiles) item files) under \(started.folder); "
                                       + "fetch and sync in this mirror ask what changed. Ctrl-C stops.\n")
                }
            }
        }
    }
}

/// Warns on stderr of the items a fetch found gone between its listing and their download, of
/// those whose deletion it could not confirm, and of what its listings saw amiss.
func tellVanished(_ report: FetchReport?) {
    for warning in [report?.vanishedWarning, report?.unconfirmedWarning].compactMap({ $0 }) + (report?.warnings ?? []) {
        writeStandardError("warning: \(terminalSafe(warning))\n")
    }
}

/// Tells on stderr (`-v`) how a fetch listed a `dir` upstream: from `tidemark watch`, or by a scan and why.
func tellFolderListing(_ report: FetchReport?) {
    switch report?.folderListing {
    case .watcher(let names)?:
        writeStandardError("Listed from the watcher: \(names) changed name\(names == 1 ? "" : "s") checked.\n")
    case .scan(let reason)?:
        writeStandardError("Listed by scanning every file: \(reason).\n")
    case nil:
        break
    }
}
