-- The plugin's version; the Go host reports the same (plugin.Version).
return "0.1.0"
