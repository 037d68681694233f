extension UInt64 {
    /// The value as 16 lower-case hexadecimal digits (ETags the adapters make).
    var hexDigits: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: (0..<16).map { digits[Int((self >> (60 - 4 * UInt64($0))) & 15)] }, as: UTF8.self)
    }
}
