// The fixture server lives on the http branch until merged.
