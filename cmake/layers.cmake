# layers.cmake — the layers of lathe, lowest first, and what each one may use.
#
# Every folder of src/ is one layer, built as its own library (lathe_<layer>, an object library); a
# layer may use (include from, call into) only the layers it declares here and what those declare,
# transitively: the layers below it. tools/ is the top layer (the command line).
#
# Two checks keep it so:
#  * the build: each layer is also linked as a shared object (build/layers/liblathe_<layer>.so) with
#    -Wl,--no-undefined against only the shared objects of the layers below it, so an upward call is
#    an undefined symbol and the build fails (off under LATHE_SANITIZE, whose runtime only
#    executables link);
#  * scripts/check_layers.py (CI: the `layers` stage of scripts/test.sh, and ctest's check_layers):
#    every #include of src/ and tools/ against this table, and the symbols of the built objects.
#    It reads the lathe_layer(...) lines below: keep each on one line.
#
# lathe_layer(NAME [DEPS layer...]) is defined in CMakeLists.txt.

lathe_layer(base)
lathe_layer(graph DEPS base)
lathe_layer(loop DEPS base)
lathe_layer(ops DEPS graph)
lathe_layer(onnx DEPS ops)
lathe_layer(io DEPS onnx)
lathe_layer(interp DEPS ops)
lathe_layer(passes DEPS ops)
lathe_layer(codegen DEPS loop)
lathe_layer(lower DEPS ops loop codegen)
lathe_layer(profile DEPS base)
lathe_layer(backend DEPS codegen profile)
lathe_layer(runtime DEPS backend lower io interp)
lathe_layer(compile DEPS runtime passes)
lathe_layer(tune DEPS compile)
lathe_layer(api DEPS tune)
lathe_layer(tools DEPS api)
