import Foundation
import GitStore
import Upstreams

/// Errors of mirror operations. Each message says what went wrong and, where it helps, what to do.
public enum MirrorError: Error, CustomStringConvertible {
    /// The folder is not a tidemark mirror: no repository, or (`isRepository`) a git repository
    /// whose config has no `tidemark.upstream`.
    case notAMirror(String, isRepository: Bool = false)
    /// A git repository with no `tidemark.upstream` whose HEAD is a snapshot naming its upstream
    /// and collections: a `git clone` of a mirror (git does not clone `.git/config`).
    case unconfiguredClone(String, upstream: String, collections: [String])
    /// `clone` was pointed at a folder that is not empty.
    case destinationNotEmpty(String)
    /// `clone` was pointed at a mirror already there (its `tidemark.upstream` is `upstream`).
    case destinationIsAMirror(String, upstream: String)
    /// An option or argument is not usable.
    case invalidArgument(String)
    /// Another tidemark process holds the mirror's lock.
    case locked(pid: Int32?, path: String)
    /// A ref moved while this run worked (e.g. a commit made during a sync).
    case concurrentUpdate(ref: String)
    /// Objects this run wrote (`count` of them, the first `first` when known) were removed
    /// before its refs named them, as `git gc --prune=now` or `git prune --expire=now` run
    /// meanwhile removes new loose objects; no ref was moved.
    case objectsRemoved(count: Int, first: ObjectID?)
    /// Objects a checkout needs are not in the repository, or cannot be read (`reason`: a
    /// damaged or partly restored object store): `first`, for `path`, `count` in all; nothing
    /// was written.
    case objectsMissing(count: Int, first: ObjectID, path: String, reason: String?, by: String)
    /// Objects this run wrote are missing from disk, and the disk is full (`reason`): a write
    /// lost to it, not a `git prune`.
    case objectsNotWritten(reason: String)
    /// A git lock file (`index.lock`, `<ref>.lock`) exists: another git process is running, or
    /// one crashed. It is never deleted by tidemark.
    case gitLocked(String)
    /// A path the sync would write through is a symbolic link in the working tree.
    case symlinkInWorkingTree(path: String, target: String)
    /// A FIFO, device or socket where the working tree has a file or folder to write (`kind` names it).
    case specialFileInWorkingTree(path: String, kind: String)
    /// A folder holding `.git` (a repository, such as a submodule a commit of the user's own
    /// added) where the sync would write or remove files.
    case nestedRepository(path: String)
    /// A file where the working tree has a folder to write into (a collection's, a fan-out
    /// folder, `.tidemark`).
    case fileInPlaceOfFolder(path: String)
    /// Local edits would be overwritten by `command` (`sync`, `rollback`).
    case localEdits([String], by: String = "sync")
    /// The index has unmerged entries (a conflict git left): a checkout cannot start.
    case unmergedFiles([String], by: String = "sync")
    /// A git merge, revert, cherry-pick, rebase or `am` is unfinished (`MERGE_HEAD` and its kin);
    /// `--force` ends a merge, revert or cherry-pick as `git reset --hard` does.
    case operationInProgress(String, by: String = "sync")
    /// Some items could not be downloaded; what did download is stored on the upstream-tracking ref.
    /// The report is the fetch's, its `failures` naming those items.
    case incompleteFetch(FetchReport)
    /// A sync's fetch could not download some items; the rest was applied to the branch (the
    /// report's `counts`, `previous` and `current`), those items kept as the branch had them and
    /// no deletion applied. Its `fetch.failures` names them; the next sync asks for them again.
    case incompleteSync(SyncReport)
    /// A clone's items could not all be downloaded. With `kept` (some were), the mirror stays
    /// there with what was downloaded on `refs/tidemark/upstream` and nothing checked out, for
    /// `tidemark sync` to finish (a rate limit a large clone runs into would otherwise fail every
    /// attempt at it); else it was removed, as `git clone` does.
    case cloneIncomplete(FetchReport, kept: String? = nil)
    /// HEAD is detached: a sync or rollback moves a branch, and none is checked out.
    case detachedHead(ObjectID)
    /// The branch has commits not made by tidemark whose changes `command` (`sync`, `rollback`)
    /// would undo.
    case ownCommits(branch: String, commits: [String], items: [String], by: String = "sync")
    /// The branch holds no snapshot at all (an orphan branch, another project's history): not
    /// the mirror's branch; `--force` adds upstream's snapshot on top of it.
    case unrelatedBranch(branch: String, commits: Int, by: String = "sync")
    /// The checked-out branch has no commit while the mirror shows it had one (a `.git` damaged
    /// or partly restored, a ref lost): starting the branch over would take every file for a
    /// new one; `--force` does.
    case lostBranch(branch: String, LostBranch, by: String = "sync")
    /// The branch has a commit but `.git/index` is gone (a backup without it, a file removed):
    /// to git every file is staged for deletion; `--force` rebuilds it from the branch.
    case indexMissing
    /// `refs/tidemark/upstream` names a commit that is no snapshot (no tidemark trailers: moved
    /// by hand): applied, its tree would be taken for upstream's.
    case upstreamNotASnapshot(ObjectID)
    /// The listing would delete too much; `--allow-mass-delete` overrides.
    case massDeletion(collection: String, deleting: Int, of: Int, detail: String)
    /// A collection the snapshot holds is no longer configured: dropping it deletes all its
    /// items, which `--allow-mass-delete` allows.
    case droppedCollection([String], items: [Int])
    /// A stored manifest is corrupt.
    case corruptManifest(collection: String, reason: String)
    /// An item id or collection name cannot be stored safely.
    case unsafeName(String)
    /// There is no snapshot yet, or the named revision does not exist.
    case unknownRevision(String)
    /// An upstream adapter failed. An upstream of an app's own that throws another error type is
    /// reported with its text (see ``Upstream``).
    case upstream(UpstreamError)
    /// The task running the operation was cancelled (`Task.cancel()`): what it wrote is not
    /// named by any ref, and the mirror is as it was (a clone's destination is removed).
    case cancelled
    /// The task running a fetch or sync was cancelled during its downloads: what did download is
    /// stored (`refs/tidemark/upstream` moved; the branch did not), as after failed downloads,
    /// and the next fetch downloads the rest (``FetchReport/notDownloaded``,
    /// ``FetchReport/unlisted``).
    case interrupted(FetchReport)
    /// A libgit2 operation failed.
    case git(GitError)
    /// Writing the working tree failed partway (a full disk, a file that could not be written):
    /// its journal stays, so the next `sync`, `fetch` or `rollback` finishes that update first.
    case workingTreeUnfinished(GitError)

    /// `refs/tidemark/upstream` does not exist (a `git clone` of a mirror, never fetched):
    /// `what` needs a fetched snapshot.
    /// What ``indexMissing`` is, for the error and for `status`.
    package static let indexMissingText = "the index (.git/index) is missing, so to git every file is staged for deletion "
        + "(and untracked): 'git reset -q' rebuilds it from the branch, keeping your files (in a 'git clone --no-checkout', "
        + "which has none, 'git checkout -f HEAD' writes them too)"

    static func nothingFetched(_ what: String) -> MirrorError {
        .invalidArgument("\(what): there is no upstream-tracking snapshot (\(Mirror.upstreamRef)) yet; run 'tidemark fetch'")
    }

    public var description: String {
        switch self {
        case .notAMirror(let path, false): return "not a tidemark mirror (or any parent up to /): \(path)"
        case .notAMirror(let path, true):
            return "not a tidemark mirror: the git repository \(path) has no tidemark.upstream in its config "
                + "(tidemark clone makes a mirror; git config tidemark.upstream restores a removed setting)"
        case .unconfiguredClone(let path, let upstream, let collections):
            let quoted = "'" + upstream.replacingOccurrences(of: "'", with: "'\\''") + "'"
            return "not a tidemark mirror yet: the git repository \(path) has no tidemark.upstream in its config (git does not "
                + "clone .git/config); its snapshots are of \(upstream), so to sync it give it the mirror's settings:\n"
                + "\tgit config tidemark.upstream \(quoted)\n"
                + collections.map { "\tgit config --add tidemark.collection \($0)\n" }.joined()
                + "and the credentials and options the mirror has ('tidemark -C <mirror> config' lists them), then 'tidemark fetch'"
        case .destinationNotEmpty(let path):
            let repository = FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent(".git"))
            return "destination path '\(path)' already exists and is not an empty directory"
                + (repository ? " (a git repository: to mirror into it, set 'git config tidemark.upstream <kind>:<location>' "
                    + "there, then run 'tidemark sync'; the Guide's \"Adopting an existing repository\" has the steps)" : "")
        case .destinationIsAMirror(let path, let upstream):
            return "destination path '\(path)' is a tidemark mirror already, of \(upstream): to update it, 'tidemark -C \(path) "
                + "sync'; to clone (again, or another upstream), remove it or give another destination"
        case .invalidArgument(let message): return message
        case .locked(let pid, let path):
            if let pid, pid == getpid() {
                return "this process is already running a tidemark command in this mirror (another Mirror handle, or a rollback or "
                    + "watch while a fetch or sync awaits; lock: \(path)): run them one after another"
            }
            // A pid left by a run killed before (the lock file is emptied only by a run that ends)
            // names no holder: the lock is another process's, perhaps a reader's `flock`.
            if let pid, RunLock.isLiving(pid) {
                return "another tidemark process (pid \(pid)) is running in this mirror (lock: \(path))"
            }
            return "another process holds this mirror's run lock: a tidemark run, or a reader or script holding it "
                + "with flock (lock: \(path))"
        case .concurrentUpdate(let ref):
            return "\(ref) changed while tidemark was working (someone committed or synced meanwhile); nothing was overwritten, run the command again"
        case .objectsRemoved(let count, let first):
            let named = first.map { " (\($0.hex)\(count == 1 ? "" : ", ..."))" } ?? ""
            return "\(count) object\(count == 1 ? "" : "s") this run wrote\(named) "
                + "disappeared before its snapshot was recorded: was 'git gc --prune=now' or 'git prune' run meanwhile? "
                + "Nothing was changed; run the command again (and run those with tidemark's lock held, as the Guide shows)"
        case .objectsMissing(let count, let first, let path, let reason, let command):
            return "the repository \(reason == nil ? "lacks" : "cannot read") \(count == 1 ? "the object" : "\(count) objects") "
                + "the \(command) writes ('\(CQuoting.quoted(path))': \(first.hex)\(reason.map { ", \($0)" } ?? "")\(count == 1 ? "" : ", ...")): "
                + "its object store is damaged or partly restored "
                + "('git fsck' names what else is missing). Nothing was changed; restore .git/objects from a backup"
                + (command == "rollback" ? ", or roll back to another snapshot" : ", or clone the mirror again")
        case .objectsNotWritten(let reason):
            return "No space left on device: \(reason), and objects this run wrote are not on disk. "
                + "Nothing was changed; free some space, then run the command again"
        case .gitLocked(let path):
            return "unable to create '\(path)': file exists; another git process seems to be running in this repository. If no git process is running (one may have crashed), remove the file and run again (tidemark removes only the lock files its own killed runs left, which this is not)"
        case .symlinkInWorkingTree(let path, let target):
            return "'\(path)' in the working tree is a symbolic link (to \(target)); tidemark never writes through links. Remove it (then, where HEAD has a file or folder there, 'git checkout -- \(path)' puts it back) and run the command again"
        case .specialFileInWorkingTree(let path, let kind):
            return "'\(path)' in the working tree is a \(kind), not a regular file; tidemark never writes through one, "
                + "not even with --force (it could write outside the mirror, or wait forever). Remove it and run the "
                + "command again (first 'git checkout -- \(path)' if it stands where an item of HEAD's was: the item is "
                + "otherwise missing, a local edit)"
        case .fileInPlaceOfFolder(let path):
            return "'\(path)' in the working tree is a file where tidemark keeps a folder; tidemark does not remove it. "
                + "Move it out of the way, then restore the folder ('git checkout -- \(path)') and run the command again"
        case .nestedRepository(let path):
            return "'\(path)' in the working tree is a git repository of its own (a folder holding .git, such as a submodule "
                + "a commit of yours added); tidemark neither writes into nor removes it, and its history is not in the "
                + "mirror's. Move it out of the mirror, then run the command again"
        case .localEdits(let items, let command):
            // Not "commit them": a commit of one's own is refused in turn (``ownCommits``).
            return "your local changes to the following items or files would be overwritten by \(command):\n"
                + items.map { "\t\($0)" }.joined(separator: "\n")
                + "\nCopy them elsewhere, then discard them ('git restore --staged --worktree <file>', with an item's file "
                + "as 'git status' or 'tidemark ls' shows it; an untracked file: remove it), or run with --force to overwrite them."
        case .unmergedFiles(let paths, let command):
            return "you have unmerged files (a conflict git left, from a merge or 'git stash pop'), so \(command) cannot update "
                + "the working tree:\n" + MirrorError.list(paths, limit: 20)
                + "\nResolve them (edit the file, then 'git add' it; or 'git checkout HEAD -- <file>' to drop your side, "
                + "'git rm <file>' for one the snapshot deleted), "
                + "or run with --force to have the items it changes overwritten"
                + (command == "sync" ? " (a merge of another clone's snapshots, as a 'git pull' makes, is then finished "
                    + "with upstream's snapshot)." : ".")
        case .operationInProgress(let operation, let command):
            let finish: String
            switch operation {
            case "merge":
                finish = "finish it ('git commit') or abort it ('git merge --abort'), or run with --force to "
                    + (command == "sync" ? "end it with upstream's snapshot (a merge of another clone's snapshots is recorded, "
                        + "one of your own commits ends as 'git reset --hard' ends it)" : "end it as 'git reset --hard' does")
            case "rebase", "am":
                finish = "finish it ('git \(operation) --continue') or abort it ('git \(operation) --abort') first"
                    + (operation == "rebase" && command == "sync" ? " (a 'git pull --rebase' of a shared mirror that conflicted in a "
                        + "manifest: abort it, then 'git pull --no-rebase' and 'tidemark sync --force' finish the merge with upstream's snapshot)" : "")
            case "bisect": finish = "end it ('git bisect reset', which checks the branch out again) first"
            case "revert", "cherry-pick":
                finish = "finish it ('git \(operation) --continue') or abort it ('git \(operation) --abort'), or run with --force to end it as 'git reset --hard' does"
            default: finish = "finish or abort it ('git \(operation) --abort') first"
            }
            return "a \(operation) is in progress, so \(command) cannot move the branch: \(finish)"
        case .incompleteFetch(let report):
            let one = report.failures.count == 1
            return "\(report.failures.count) item\(one ? "" : "s") could not be downloaded; the rest is stored and the next fetch retries "
                + (one ? "it" : "them") + ":\n" + MirrorError.list(report.failures, limit: 20)
        case .incompleteSync(let report):
            let failures = report.fetch?.failures ?? []
            let one = failures.count == 1
            let collections = (report.fetch?.collections ?? []).filter { $0.failed > 0 }.map(\.name).sorted()
            let held = collections.count == 1 ? "'\(collections[0])' deletes" : "their collections delete"
            let applied = report.previous == report.current ? "nothing else changed" : "the rest is synced"
            return "\(failures.count) item\(one ? "" : "s") could not be downloaded (the branch keeps \(one ? "it" : "them") as it had "
                + "\(one ? "it" : "them"), or without \(one ? "it" : "them") if new, and \(held) nothing this run); \(applied), and the "
                + "next sync retries \(one ? "it" : "them"):\n" + MirrorError.list(failures, limit: 20)
        case .cloneIncomplete(let report, let kept):
            let failed = "\(report.failures.count) item\(report.failures.count == 1 ? "" : "s") could not be downloaded"
            let when = "(once upstream serves them, or their files are fixed or removed):\n"
            guard let kept else {
                return failed + ", so the clone was removed; run it again " + when + MirrorError.list(report.failures, limit: 20)
            }
            return failed + "; the \(report.downloaded) downloaded are kept in '\(kept)' (on tidemark/upstream; nothing is checked out "
                + "yet): 'tidemark -C \(kept) sync' downloads the rest and checks the mirror out " + when
                + MirrorError.list(report.failures, limit: 20)
        case .detachedHead(let commit):
            return "HEAD is detached at \(commit.short()); tidemark moves the branch a mirror has checked out. Check it out again ('git switch main') and run the command again"
        case .ownCommits(let branch, let commits, let items, let command):
            let force = command == "sync" ? "replace them with upstream's version (they stay in the history)"
                : "undo them (the history, or for --hard the reflog, keeps them)"
            return "\(branch) has commits of your own that a \(command) would undo:\n" + MirrorError.list(commits, limit: 10)
                + "\nThey change:\n" + MirrorError.list(items, limit: 20)
                + "\nRevert them ('git revert'), or run with --force to \(force)."
        case .unrelatedBranch(let branch, let commits, let command):
            return "\(branch) holds no snapshot of this mirror (none of its \(commits) commit\(commits == 1 ? "" : "s") is one: its history "
                + "is not the mirror's), so a \(command) would put the mirror's files on top of it: switch to the mirror's branch "
                + "('git branch --contains tidemark/upstream' names it), or run with --force to add upstream's snapshot on top of it "
                + "(a commit holding the mirror's files alone: the branch's own files leave it, its history keeps them)."
        case .lostBranch(let branch, let lost, let command):
            let (lastKnown, indexed) = (lost.lastKnown, lost.indexedFiles)
            let files = "the index holds \(indexed) file\(indexed == 1 ? "" : "s")"
            guard let lastKnown else {
                return "\(branch) has no commit, but \(files), so a \(command) would take them for new ones: commit them "
                    + "('git commit'), or unstage them ('git rm -r --cached -q .') to start the branch from upstream's snapshot, "
                    + "or run with --force to write it over them."
            }
            return "\(branch) does not exist, but its reflog shows it at \(lastKnown.short())"
                + (indexed > 0 ? " and \(files)" : "") + " (a ref lost from a damaged or partly restored .git?)"
                + (command == "sync" ? ", so a sync would start it over" : "")
                + ": restore it with 'git update-ref refs/heads/\(branch) \(lastKnown.hex)' and run the command again"
                + (command == "sync" ? ", or run with --force to start the branch from upstream's snapshot." : ".")
        case .indexMissing:
            return MirrorError.indexMissingText + ", or run with --force to have tidemark rebuild it."
        case .upstreamNotASnapshot(let commit):
            return "refs/tidemark/upstream names \(commit.short()), which is no snapshot of this mirror (it carries neither "
                + "tidemark's trailers nor a .tidemark folder: was the ref moved by hand?), so its files are not upstream's: 'tidemark fetch' makes a new snapshot of "
                + "upstream (so does a sync, not --offline), or 'git update-ref refs/tidemark/upstream tidemark/upstream@{1}' puts "
                + "the last one back"
        case .massDeletion(let collection, let deleting, let total, let detail):
            return "refusing to delete \(deleting) of \(total) items of '\(collection)' (upstream listing empty or more than half missing"
                + (detail.isEmpty ? "" : "; \(detail)") + "); if upstream really lost them, run again with --allow-mass-delete"
        case .droppedCollection(let collections, let items):
            // Every one named: adding back only the first, while tidemark.collection is unset,
            // would make it the only one, and the next run refuse for the others.
            let named = zip(collections, items).map { "'\($0)' (\($1) file\($1 == 1 ? "" : "s"))" }
            let one = collections.count == 1
            return "collection\(one ? "" : "s") \(named.count == 2 ? named.joined(separator: " and ") : named.joined(separator: ", ")) "
                + "\(one ? "is" : "are") in the snapshot but no longer in tidemark.collection: "
                + "run again with --allow-mass-delete to remove \(one ? "its" : "their") files from the snapshot (the history keeps them), "
                + "or mirror \(one ? "it" : "them") again with: "
                + collections.map { "git config --add tidemark.collection \($0)" }.joined(separator: " && ")
        case .corruptManifest(let collection, let reason): return "manifest of '\(collection)' is corrupt: \(reason)"
        case .unsafeName(let message): return message
        case .unknownRevision(let revision): return "unknown revision '\(revision)'"
        case .upstream(let error): return error.description
        case .cancelled: return "cancelled; the mirror is as it was before the run"
        case .interrupted(let report):
            let stored = report.downloaded == 1 ? "the item downloaded" : "the \(report.downloaded) items downloaded"
            let failed = report.failures.isEmpty ? ""
                : "; \(report.failures.count) item\(report.failures.count == 1 ? "" : "s") could not be downloaded:\n" + MirrorError.list(report.failures, limit: 20)
            return "interrupted: stored \(stored) onto tidemark/upstream; the next fetch or sync gets the rest ("
                + report.leftByInterruption + ")" + failed
        case .git(let error):
            // libgit2 cannot read a split index (git update-index --split-index, core.splitIndex).
            if error.message.contains("unsupported mandatory extension: 'link'") {
                return error.description + " (the index is split, which libgit2 cannot read: run 'git update-index "
                    + "--no-split-index', and unset core.splitIndex if it is set)"
            }
            // Nor a sparse index (git sparse-checkout --sparse-index, index.sparse).
            if error.message.contains("unsupported mandatory extension: 'sdir'") {
                return error.description + " (the index is a sparse index, which libgit2 cannot read: run 'git "
                    + "sparse-checkout set --no-sparse-index', or 'git sparse-checkout disable')"
            }
            if error.damagedObjectStore {
                return error.description + " (the repository's object store is damaged: 'git fsck' names what is missing or "
                    + "corrupt; restore .git/objects from a backup, or clone the mirror again)"
            }
            if error.damagedIndex {
                return error.description + " (the index file is damaged: 'rm .git/index && git reset -q' rebuilds it from the "
                    + "branch, keeping your files)"
            }
            return error.description
        case .workingTreeUnfinished(let error):
            return error.description + "\nThe working tree was left partly updated: once that is fixed, run the command "
                + "again, and it finishes the update first ('tidemark status' lists the files already written as edited until then)."
        }
    }
}

extension MirrorError {
    /// `lines`, each on its own tab-indented line, the first `limit` of them and a count of the rest.
    static func list(_ lines: [String], limit: Int) -> String {
        lines.prefix(limit).map { "\t\($0)" }.joined(separator: "\n")
            + (lines.count > limit ? "\n\t... and \(lines.count - limit) more" : "")
    }
}

/// Runs `body`, turning GitStore and upstream errors into ``MirrorError``.
func mirrorErrors<R>(_ body: () throws -> R) throws(MirrorError) -> R {
    do {
        return try body()
    } catch let error as MirrorError {
        throw error
    } catch let error as GitError {
        throw .git(error)
    } catch let error as UpstreamError {
        throw .upstream(error)
    } catch {
        throw .invalidArgument(String(describing: error))
    }
}
