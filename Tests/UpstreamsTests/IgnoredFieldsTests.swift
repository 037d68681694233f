import Foundation
import Testing
@testable import Upstreams

@Suite struct IgnoredFieldsTests {
    static func removing(_ pointers: [String], from text: String) throws -> String {
        let value = try JSONValue.parse(Data(text.utf8))
        return String(decoding: IgnoredFields(pointers).removing(from: value).serialized(), as: UTF8.self)
    }

    @Test func pointersNameMembersElementsAndEscapedKeys() throws {
        let doc = #"{"a": {"b": 1, "c": 2}, "list": [10, 20, 30], "x/y": 1, "m~n": 2, "keep": true}"#
        #expect(try Self.removing(["/a/b"], from: doc) == #"{"a":{"c":2},"keep":true,"list":[10,20,30],"m~n":2,"x/y":1}"#)
        #expect(try Self.removing(["/list/1"], from: doc) == #"{"a":{"b":1,"c":2},"keep":true,"list":[10,30],"m~n":2,"x/y":1}"#)
        #expect(try Self.removing(["/x~1y", "/m~0n"], from: doc) == #"{"a":{"b":1,"c":2},"keep":true,"list":[10,20,30]}"#)
        // Nothing there: the document as it was.
        #expect(try Self.removing(["/a/z", "/list/9", "/list/01", "/keep/deeper", "/nothing"], from: doc)
                == #"{"a":{"b":1,"c":2},"keep":true,"list":[10,20,30],"m~n":2,"x/y":1}"#)
    }

    @Test func aStarStandsForEveryMemberAndElement() throws {
        let doc = #"{"docs": [{"uri": "u1", "name": "n1"}, {"uri": "u2", "name": "n2"}], "tabs": {"t1": {"x": 1, "y": 2}, "t2": {"x": 3}}}"#
        #expect(try Self.removing(["/docs/*/uri"], from: doc) == #"{"docs":[{"name":"n1"},{"name":"n2"}],"tabs":{"t1":{"x":1,"y":2},"t2":{"x":3}}}"#)
        #expect(try Self.removing(["/tabs/*/x"], from: doc) == #"{"docs":[{"name":"n1","uri":"u1"},{"name":"n2","uri":"u2"}],"tabs":{"t1":{"y":2},"t2":{}}}"#)
        #expect(try Self.removing(["/docs/*"], from: doc) == #"{"docs":[],"tabs":{"t1":{"x":1,"y":2},"t2":{"x":3}}}"#)
    }

    @Test func keysAreComparedByteForByte() throws {
        // `é` precomposed and decomposed are two keys: only the one named goes.
        let doc = "{\"caf\u{E9}\": 1, \"cafe\u{301}\": 2}"
        let removed = try Self.removing(["/caf\u{E9}"], from: doc)
        #expect(removed == "{\"cafe\u{301}\":2}")
    }

    @Test func unusablePointersAreNamed() {
        #expect(IgnoredFields.problem("/a/b") == nil)
        #expect(IgnoredFields.problem("/a~0~1") == nil)
        #expect(IgnoredFields.problem("views") == "'views' is not a JSON pointer: it must start with '/', as in /lastUsed")
        #expect(IgnoredFields.problem("") == "an empty pointer names the whole item, which cannot be left out")
        #expect(IgnoredFields.problem("/a~") == "'/a~' holds a '~' that is not written '~0' ('~') or '~1' ('/')")
        #expect(IgnoredFields.problem("/a~2") != nil)
    }

    @Test func aStoredBodyTagIsNoPartOfTheValidator() {
        #expect(ListedItem.validator(of: "0123456789abcdef+body-fedcba9876543210") == "0123456789abcdef")
        #expect(ListedItem.validator(of: "0123456789abcdef") == "0123456789abcdef")
        // An HTTP ETag ends with a quote, and a tag must be 16 lower-case hex digits.
        #expect(ListedItem.validator(of: "\"x+body-fedcba9876543210\"") == "\"x+body-fedcba9876543210\"")
        #expect(ListedItem.validator(of: "s+body-FEDCBA9876543210") == "s+body-FEDCBA9876543210")
    }
}
