# Prints the signature of every op registered in TensorFlow, one line per op, sorted by name:
#   Name <inputs> -> <outputs> [; attr=dtype ...]
# Each argument is `T` (dtype from type attribute T), `#N` (fixed dtype, DataType number N),
# `K*T` or `K*#N` (K copies, K an int attribute) or `[L]` (a type-list attribute L); arguments
# are separated by commas. The trailing part lists the defaults of type attributes.
# Run by `cargo xtask op-signatures` (writes signatures.txt) and by the test that checks it.
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: F401  (registers every op)
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session as c_api

ops = op_def_pb2.OpList()
ops.ParseFromString(bytes(c_api.TF_GetBuffer(c_api.TF_GetAllOpList())))


def arg(a):
    one = a.type_attr if a.type_attr else "#%d" % a.type
    if a.type_list_attr:
        return "[%s]" % a.type_list_attr
    if a.number_attr:
        return "%s*%s" % (a.number_attr, one)
    return one


lines = []
for op in ops.op:
    line = "%s %s -> %s" % (
        op.name,
        ",".join(arg(a) for a in op.input_arg),
        ",".join(arg(a) for a in op.output_arg),
    )
    defaults = [
        "%s=%d" % (a.name, a.default_value.type)
        for a in op.attr
        if a.type == "type" and a.default_value.HasField("type")
    ]
    if defaults:
        line += " ; " + " ".join(defaults)
    lines.append(line)
for line in sorted(set(lines)):
    print(line)
