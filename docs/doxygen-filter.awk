# Doxygen filter for libdarray's headers (FILTER_PATTERNS in docs/Doxyfile): the headers document their API with
# plain `//` comments (STYLE.md: a header reads as API), so this turns them into documentation comments on the fly,
# leaving every line where it is (warnings keep their line numbers):
#   - the comment block that opens a file becomes the file's description (`/// \file <path>` on its first line);
#   - a comment line before a declaration documents it (`///`);
#   - a comment after a member or enumerator on its line documents that member (`///<`).
# Comments inside function bodies become part of the function's detailed description, as Doxygen treats them.
# POSIX awk (Debian's default mawk): no gensub.
NR == 1 { opening = 1 }
opening && /^\/\// {
  text = substr($0, 3)
  if (NR == 1) print "/// \\file " FILENAME text
  else print "///" text
  next
}
{ opening = 0 }
/^[ \t]*\/\/( |$)/ { sub(/\/\//, "///"); print; next }
/[;,][ \t]+\/\/ / {
  i = index($0, "// ")
  print substr($0, 1, i - 1) "///< " substr($0, i + 3)
  next
}
{ print }
