import Upstreams

/// git's quoting of unusual names (`quote_c_style`): a name with a control character, `"`, `\`
/// or a byte above 0x7f is wrapped in double quotes with C escapes and octal bytes. The
/// adapters quote their messages with the same code (`CQuoting` in Upstreams).
package enum Quoting {
    /// `name` quoted like git quotes paths when `core.quotePath` is on.
    package static func cQuoted(_ bytes: [UInt8]) -> String { CQuoting.quoted(bytes) }

    /// Appends `bytes` to `out` quoted as ``cQuoted(_:)`` quotes them.
    package static func append(quoting bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        CQuoting.append(quoting: bytes, to: &out)
    }

    /// An id for messages: quoted when unusual, so control characters never reach a terminal.
    package static func display(_ id: ItemID) -> String { cQuoted(id.bytes) }
}
