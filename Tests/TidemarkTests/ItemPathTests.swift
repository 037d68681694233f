import Foundation
import Testing
import Tidemark

/// Hostile ids from reliability.md's checklist; each must map to a safe, distinct, reversible name.
let hostileIDs: [[UInt8]] = [
    Array(".".utf8), Array("..".utf8), Array("../x".utf8), Array("/x".utf8), Array("a/b".utf8),
    Array("a\\b".utf8), [97, 0, 98], Array("x\n".utf8), Array("x\r".utf8), Array("tab\there".utf8),
    Array(".git".utf8), Array(".GIT".utf8), Array(".git.".utf8), Array("git~1".utf8), Array("GIT~1".utf8),
    Array(".g\u{200C}it".utf8), Array(".gitattributes".utf8), Array(".gitmodules".utf8), Array(".tidemark".utf8),
    Array("CON".utf8), Array("con".utf8), Array("aux.json".utf8), Array("com1".utf8), Array("LPT9.txt".utf8),
    [UInt8](repeating: 120, count: 300), Array(String(repeating: "é", count: 200).utf8),
    Array("Post".utf8), Array("post".utf8), Array("POST".utf8),
    Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8),  // NFC / NFD
    [0xff, 0xfe, 0x41], [0xc3], Array("-rf".utf8), Array("--help".utf8), Array("x.".utf8), Array("x ".utf8),
    Array("a:b".utf8), Array(".git::$INDEX_ALLOCATION".utf8), Array("%2e%2e%2f".utf8), Array("^a".utf8),
    Array("a+b".utf8), Array("<>:\"|?*".utf8), Array("C:\\x".utf8), Array("\\\\server\\share".utf8),
    Array("normal-id_1".utf8), Array("9c1a2b3c-0000-4000-8000-000000000001".utf8),
]

@Suite("Item paths: hostile ids stay safe, distinct and reversible")
struct ItemPathTests {
    nonisolated(unsafe) static let safeName = try! Regex("^[a-z0-9_%^][a-z0-9_.%^+-]*\\.json$")

    @Test(arguments: hostileIDs)
    func encodingIsSafeAndReversible(_ bytes: [UInt8]) throws {
        let id = ItemID(bytes: bytes)
        let name = try ItemPath.fileName(for: id)
        #expect(name.wholeMatch(of: Self.safeName) != nil, "unsafe name \(name)")
        #expect(name.utf8.count <= 255)
        #expect(!name.lowercased().hasPrefix(".git") && !name.hasPrefix("."))
        let stem = String(name.dropLast(5))
        let base = stem.split(separator: ".").first.map(String.init) ?? stem
        #expect(!["con", "prn", "aux", "nul", "com1", "lpt9"].contains(base))
        if stem.contains("+") {
            #expect(bytes.count > 60, "only long ids are shortened")
            #expect(ItemPath.decode(stem) == nil)
        } else {
            #expect(ItemPath.decode(stem) == id)
        }
    }

    @Test func encodingsAreDistinctEvenIgnoringCase() throws {
        let names = try hostileIDs.map { try ItemPath.fileName(for: ItemID(bytes: $0)) }
        #expect(Set(names).count == hostileIDs.count)
        #expect(Set(names.map { $0.lowercased() }).count == hostileIDs.count)
    }

    @Test func readableIdsStayReadable() throws {
        #expect(try ItemPath.fileName(for: ItemID("9c1a2b3c-0000-4000")) == "9c1a2b3c-0000-4000.json")
        #expect(try ItemPath.fileName(for: ItemID("Post")) == "^post.json")
        #expect(try ItemPath.fileName(for: ItemID("a/b")) == "a%2fb.json")
        #expect(try ItemPath.fileName(for: ItemID(".git")) == "%2egit.json")
    }

    @Test func emptyIdsAreRejected() {
        #expect(throws: ItemPath.Error.emptyID) { try ItemPath.fileName(for: ItemID(bytes: [])) }
    }

    @Test func nonCanonicalStemsDoNotDecode() {
        #expect(ItemPath.decode("%41") == nil)  // 'A' must be written ^a
        #expect(ItemPath.decode("%2") == nil)
        #expect(ItemPath.decode("^1") == nil)
        #expect(ItemPath.decode("") == nil)
    }

    @Test func fanoutPutsItemsInFoldersNamedByTheHashOfTheirID() throws {
        let path = try ItemPath.relativePath(for: ItemID("abc"), fanoutDigits: ItemPath.fanoutDigits)
        #expect(path.wholeMatch(of: try Regex("^[0-9a-f]{3}/abc\\.json$")) != nil)
        // Two digits (mirrors fanned out before there were three) are a prefix of the three.
        let old = try ItemPath.relativePath(for: ItemID("abc"), fanoutDigits: 2)
        #expect(old == String(path.prefix(2)) + "/abc.json")
        #expect(try ItemPath.relativePath(for: ItemID("abc"), fanoutDigits: 0) == "abc.json")
        #expect(ItemPath.fanoutDigits(ofStoredPath: path) == 3)
        #expect(ItemPath.fanoutDigits(ofStoredPath: old) == 2)
        #expect(ItemPath.fanoutDigits(ofStoredPath: "abc.json") == 0)
    }

    @Test func collectionNamesAreValidated() {
        for good in ["templates", "posts", "wp_block", "a-b", "0"] { #expect(CollectionName.isValid(good)) }
        for bad in ["", ".git", ".tidemark", "Posts", "a/b", "..", "-x", "a b", String(repeating: "a", count: 65)] {
            #expect(!CollectionName.isValid(bad), "\(bad)")
        }
    }
}
