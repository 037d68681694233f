/// Parsing of HTTP-dates (RFC 9110 §5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime
/// forms that recipients must still accept.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The instant an HTTP-date names, or nil when `text` is not one.
    static func parse(_ text: String) -> Timestamp? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: String?
        if tokens.count == 6, tokens[5] == "GMT" {  // Sun, 06 Nov 1994 08:49:37 GMT
            day = Int(tokens[1]); month = monthNumber(tokens[2]); year = Int(tokens[3]); time = tokens[4]
        } else if tokens.count == 4, tokens[3] == "GMT" {  // Sunday, 06-Nov-94 08:49:37 GMT
            let parts = tokens[1].split(separator: "-").map(String.init)
            guard parts.count == 3, let yy = Int(parts[2]) else { return nil }
            day = Int(parts[0]); month = monthNumber(parts[1]); time = tokens[2]
            year = yy < 100 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
        } else if tokens.count == 5 {  // Sun Nov  6 08:49:37 1994
            month = monthNumber(tokens[1]); day = Int(tokens[2]); time = tokens[3]; year = Int(tokens[4])
        }
        guard let day, let month, let year, let time, (1...31).contains(day), (0...9999).contains(year)
        else { return nil }
        let iso = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + time + "Z"
        return Timestamp(iso)
    }

    private static func monthNumber(_ name: String) -> Int? {
        months.firstIndex(of: name.lowercased()).map { $0 + 1 }
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
