import ArgumentParser
import Foundation
import Tidemark

extension TidemarkCommand {
    /// `tidemark ls [<revision>]`
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the cached items: id, upstream version and file, from the snapshot's manifests.",
            discussion: """
                One line per item of the snapshot (HEAD unless a revision is
                given), sorted by collection and id: <collection>/<id>, the
                upstream lastModified it was cached at, and its file, separated
                by tabs (ids with control characters, quotes or non-ASCII bytes
                C-quoted as git quotes paths). Reads the manifests only: local
                edits are not shown ('tidemark status' shows them). Never
                contacts upstream.

                Examples:
                  tidemark ls
                  tidemark ls --collection pages
                  tidemark ls upstream             what the last fetch holds
                  tidemark ls HEAD~3 --json
                """)

        @ParentCommand var root: TidemarkCommand
        @OptionGroup var output: OutputOptions

        @Argument(help: "The snapshot to list (default: HEAD; 'upstream' for the upstream-tracking ref).")
        var revision: String?

        @Option(help: "Only this collection.")
        var collection: String?

        @Flag(help: "Print a JSON array of {collection, id, lastModified, path}.")
        var json = false

        func run() async throws {
            let mirror = try root.openMirror()
            let items = try await engine { () async throws(MirrorError) in
                try await mirror.cachedItems(in: collection, at: revision)
            }
            if json {
                emitJSON(items.map { ItemJSON(collection: $0.collection, id: $0.id.description, lastModified: $0.lastModified, path: $0.path) })
                return
            }
            emit(Self.lines(items))
        }

        /// One line per item: `collection/id`, version and path, each C-quoted when unusual,
        /// written into one buffer (100k items: 0.1 s less than a `String` per field).
        static func lines(_ items: [CachedItem]) -> String {
            var out: [UInt8] = []
            out.reserveCapacity(items.count * 80)
            var name: [UInt8] = []
            for item in items {
                name.removeAll(keepingCapacity: true)
                name.append(contentsOf: item.collection.utf8)
                name.append(UInt8(ascii: "/"))
                name.append(contentsOf: item.id.bytes)
                name.withUnsafeBufferPointer { Quoting.append(quoting: $0, to: &out) }
                var (version, path) = (item.lastModified, item.path)
                out.append(UInt8(ascii: "\t"))
                version.withUTF8 { Quoting.append(quoting: $0, to: &out) }
                out.append(UInt8(ascii: "\t"))
                path.withUTF8 { Quoting.append(quoting: $0, to: &out) }
                out.append(UInt8(ascii: "\n"))
            }
            return String(decoding: out, as: UTF8.self)
        }

        struct ItemJSON: Encodable {
            var collection: String
            var id: String
            var lastModified: String
            var path: String
        }
    }
}
