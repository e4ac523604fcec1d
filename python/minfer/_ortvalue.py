"""ONNX Runtime's OrtValue and IOBinding (docs/python.md, "OrtValue and IOBinding").

Values live in host memory ('cpu') or on the OpenCL device ('opencl'; 'gpu'
is taken as it): minfer's device values (minfer.h,
minfer_session_device_tensor_create) belong to the session whose provider
holds them, so an OrtValue made on 'opencl' before any session holds a host
copy and moves to a session's device at its first run there; an output
bound to 'opencl' stays on that session's device, and feeding it to the
next run of that session reads it in place (no host round trip). Other
device names ORT knows ('cuda', 'dml', ...) raise NotImplemented naming
'opencl'.

Zero copies on the Python side for host values: an OrtValue from a
C-contiguous numpy array shares that array's memory; an input bound to it is
read from there (minfer_tensor_wrap); an output bound to an OrtValue, a
numpy array or a buffer pointer is written into that memory by the run
(minfer_session_run with caller-supplied outputs), and get_outputs() returns
those very values.
"""

import ctypes as _ctypes

import numpy as _np

from ._minfer import DeviceTensor as _DeviceTensor, InvalidArgument, NotImplemented

# ONNX element types (TensorProto.DataType) and numpy's, both ways.
_ONNX_TYPES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16",
}
_NUMPY_OF = {
    1: _np.float32, 2: _np.uint8, 3: _np.int8, 4: _np.uint16, 5: _np.int16, 6: _np.int32,
    7: _np.int64, 8: _np.object_, 9: _np.bool_, 10: _np.float16, 11: _np.float64,
    12: _np.uint32, 13: _np.uint64, 14: _np.complex64, 15: _np.complex128,
    16: _np.uint16,  # bfloat16's bits, as minfer's outputs carry them
}


def _onnx_type_of(dtype):
    d = _np.dtype(dtype)
    if d.kind in "USO":
        return 8
    for code, np_type in _NUMPY_OF.items():
        if code != 16 and _np.dtype(np_type) == d:
            return code
    raise InvalidArgument("numpy dtype %s has no ONNX element type" % d)


# The devices an OrtValue or a binding takes: ORT's name -> minfer's provider
# (None: host memory).
_DEVICES = {"cpu": None, "opencl": "opencl", "gpu": "opencl"}


def _check_device(device_type, device_id=0, what="OrtValue"):
    """minfer's provider for ORT's device name (None for 'cpu')."""
    name = device_type if isinstance(device_type, str) else getattr(device_type, "name", device_type)
    if not isinstance(name, str) or name.lower() not in _DEVICES:
        raise NotImplemented(
            "%s on device %r: minfer's values live in host memory ('cpu') or on the OpenCL "
            "device ('opencl', the OpenCL provider, which runs on GPUs with an OpenCL driver); "
            "it has no %r device" % (what, name, name))
    if device_id not in (0, None):
        raise InvalidArgument("%s: device_id %r: minfer has one %s device, device 0"
                              % (what, device_id, name.lower()))
    return _DEVICES[name.lower()]


def _dtype_of(element_type):
    """A numpy dtype from ORT's element_type argument: a numpy type or dtype,
    or an ONNX element type number."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        if element_type not in _NUMPY_OF:
            raise InvalidArgument("element_type %d is no ONNX element type" % element_type)
        return _np.dtype(_NUMPY_OF[element_type]), element_type
    try:
        d = _np.dtype(element_type)
    except TypeError as e:
        raise InvalidArgument("element_type %r: %s" % (element_type, e)) from None
    return d, _onnx_type_of(d)


def _shape_of(shape):
    try:
        dims = [int(d) for d in shape]
    except TypeError:
        raise InvalidArgument("shape must be a sequence of sizes, not %r" % (shape,)) from None
    if any(d < 0 for d in dims):
        raise InvalidArgument("shape %r has a negative size" % (dims,))
    return dims


def _array_at(buffer_ptr, dtype, shape, what):
    """A numpy array over caller memory at buffer_ptr (no copy)."""
    if dtype.kind in "USO":
        raise InvalidArgument("%s: strings cannot be bound by pointer" % what)
    if not isinstance(buffer_ptr, int) or isinstance(buffer_ptr, bool) or buffer_ptr <= 0:
        raise InvalidArgument("%s: buffer_ptr must be the address of the data, not %r" % (what, buffer_ptr))
    count = 1
    for d in shape:
        count *= d
    buf = (_ctypes.c_char * (count * dtype.itemsize)).from_address(buffer_ptr)
    return _np.frombuffer(buf, dtype=dtype, count=count).reshape(shape)


class OrtValue:
    """ONNX Runtime's OrtValue: a tensor (a numpy array, in host memory), a
    sequence (a list of arrays) or an optional (None when empty)."""

    def __init__(self, value, elem_type=None, device=None):
        # A host value: a numpy array, a list, None. On a device: a
        # DeviceTensor of a session, or (not yet on one) a host copy.
        self._value = value
        self._elem = elem_type  # an ONNX element type where the array's dtype is not it (bfloat16)
        self._device = device  # None: host memory; else minfer's provider ("opencl")
        if isinstance(value, _DeviceTensor):
            self._device = value.device

    def __repr__(self):
        if self.is_tensor():
            return "OrtValue(%s, shape=%s, device='%s')" % (self.data_type(), self.shape(),
                                                           self.device_name())
        return "OrtValue(%s)" % self.data_type()

    def _on_device(self, sess):
        """This value as a DeviceTensor of sess (a minfer._minfer.Session):
        in place when it is on sess's device already, else moved there (a
        host copy uploaded, or another session's value read back and
        uploaded) and kept there for the next runs."""
        v = self._value
        if isinstance(v, _DeviceTensor) and v.session is sess:
            return v
        arr = v.numpy() if isinstance(v, _DeviceTensor) else v
        d = sess.device_tensor(self._device, self._elem or _onnx_type_of(arr.dtype),
                               list(arr.shape), arr)
        self._value = d
        return d

    # -- Making one --

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        """An OrtValue over numpy_obj: sharing its memory (no copy) when it is
        C-contiguous, aligned and in native byte order, else over a
        C-contiguous copy. Keep the array alive as long as the value."""
        device = _check_device(device_type, device_id)
        arr = _np.asarray(numpy_obj)
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
        if device is not None:
            if arr.dtype.kind == "O":
                raise InvalidArgument("OrtValue on '%s': strings have no device values" % device)
            _onnx_type_of(arr.dtype)
            # a copy, moved to the device of the first session that runs with it
            return OrtValue(_np.array(arr, order="C", dtype=arr.dtype.newbyteorder("=")),
                            device=device)
        if not (arr.flags.c_contiguous and arr.flags.aligned and arr.dtype.isnative):
            arr = _np.ascontiguousarray(arr, dtype=arr.dtype.newbyteorder("="))
        return OrtValue(arr)

    @staticmethod
    def ortvalue_from_numpy_with_onnx_type(data, onnx_element_type):
        """An OrtValue over data's memory with the ONNX element type given
        (bfloat16, 16, from its bits in a uint16 array)."""
        v = OrtValue.ortvalue_from_numpy(data)
        if _np.dtype(_NUMPY_OF.get(onnx_element_type, _np.void)) != v._value.dtype:
            raise InvalidArgument("an array of %s cannot hold ONNX element type %r"
                                  % (v._value.dtype, onnx_element_type))
        v._elem = onnx_element_type
        return v

    @staticmethod
    def ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        """A new tensor of this shape and element type (a numpy type or an
        ONNX element type number), zero-filled, for a run to write into."""
        device = _check_device(device_type, device_id)
        dtype, code = _dtype_of(element_type)
        if device is not None and dtype.kind == "O":
            raise InvalidArgument("OrtValue on '%s': strings have no device values" % device)
        v = OrtValue(_np.zeros(_shape_of(shape), dtype=dtype), device=device)
        v._elem = code if code == 16 else None
        return v

    # -- Reading it --

    def is_tensor(self):
        return isinstance(self._value, (_np.ndarray, _DeviceTensor))

    def is_tensor_sequence(self):
        return isinstance(self._value, list)

    def is_sparse_tensor(self):
        return False

    def has_value(self):
        """False for an empty optional."""
        return self._value is not None

    def _tensor(self, what):
        if not self.is_tensor():
            raise InvalidArgument("OrtValue.%s: the value is not a tensor (%s)" % (what, self.data_type()))
        return self._value

    def element_type(self):
        """The ONNX element type number (TensorProto.DataType)."""
        t = self._tensor("element_type")
        if isinstance(t, _DeviceTensor):
            return t.elem
        return self._elem or _onnx_type_of(t.dtype)

    def data_type(self):
        """ORT's type string: 'tensor(float)', 'seq(tensor(float))', 'optional(...)'."""
        if self._value is None:
            return "optional(unknown)"
        if isinstance(self._value, list):
            inner = OrtValue(self._value[0]).data_type() if self._value else "tensor(unknown)"
            return "seq(%s)" % inner
        return "tensor(%s)" % _ONNX_TYPES[self.element_type()]

    def shape(self):
        return list(self._tensor("shape").shape)

    def device_name(self):
        """'cpu', or the device the value lives on ('opencl')."""
        return self._device or "cpu"

    def data_ptr(self):
        """The address of the first element (host memory)."""
        t = self._tensor("data_ptr")
        if self._device is not None:
            raise NotImplemented("OrtValue.data_ptr: the value is on '%s', whose memory has no "
                                 "host address; numpy() reads it back" % self._device)
        return t.ctypes.data

    def numpy(self):
        """The tensor as a numpy array on the value's memory (not a copy: a
        later run writing into this value changes it); a sequence as a list.
        A value on a device is read back: a new array."""
        if isinstance(self._value, _DeviceTensor):
            return self._value.numpy()
        if self._device is not None:
            return self._value.copy()
        if isinstance(self._value, _np.ndarray):
            return self._value.view()
        if isinstance(self._value, list):
            return [a.view() for a in self._value]
        raise InvalidArgument("OrtValue.numpy: an empty optional has no value")

    def update_inplace(self, np_arr):
        """Copies np_arr (of the value's shape and type) into the value's memory."""
        t = self._tensor("update_inplace")
        src = _np.asarray(np_arr)
        if isinstance(t, _DeviceTensor):
            if _onnx_type_of(src.dtype) != t.elem or list(src.shape) != t.shape:
                raise InvalidArgument("update_inplace: %s %s into a value of %s %s"
                                      % (src.dtype, list(src.shape), self.data_type(), t.shape))
            t.update(src)
            return
        if src.dtype != t.dtype or list(src.shape) != list(t.shape):
            raise InvalidArgument("update_inplace: %s %s into a value of %s %s"
                                  % (src.dtype, list(src.shape), t.dtype, list(t.shape)))
        _np.copyto(t, src)

    def as_sparse_tensor(self):
        raise NotImplemented("OrtValue.as_sparse_tensor: minfer has no sparse tensors")


def _as_ortvalue(v, what):
    if not isinstance(v, OrtValue):
        raise TypeError("%s must be an OrtValue, not %s" % (what, type(v).__name__))
    return v


class IOBinding:
    """ONNX Runtime's IOBinding (session.io_binding()): inputs and outputs
    bound by name, then session.run_with_iobinding(binding). An output bound
    to an OrtValue or a buffer is written into its memory by every run; one
    bound by device only is allocated by the run."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}  # name -> OrtValue, or None (the run allocates it); in bind order
        self._results = []

    # -- Inputs --

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds a numpy array (its memory, when C-contiguous: no copy)."""
        self._inputs[name] = OrtValue.ortvalue_from_numpy(arr_on_cpu)

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Binds the tensor at buffer_ptr (host memory the caller keeps alive)."""
        if _check_device(device_type, device_id, "bind_input '%s'" % name) is not None:
            raise NotImplemented("bind_input '%s' on %r: a device buffer is bound as an OrtValue "
                                 "(bind_ortvalue_input), not by pointer" % (name, device_type))
        dtype, code = _dtype_of(element_type)
        arr = _array_at(buffer_ptr, dtype, _shape_of(shape), "bind_input '%s'" % name)
        self._inputs[name] = OrtValue(arr, code if code == 16 else None)

    def bind_ortvalue_input(self, name, ortvalue):
        self._inputs[name] = _as_ortvalue(ortvalue, "bind_ortvalue_input: ortvalue")

    def synchronize_inputs(self):
        """Nothing to wait for: a value's upload is ordered before the runs
        that read it."""

    def clear_binding_inputs(self):
        self._inputs.clear()

    # -- Outputs --

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Binds output `name`: to the memory at buffer_ptr (with its element
        type and shape), written by each run; else to the device, the run
        then allocating it (get_outputs() has it afterwards): on 'opencl'
        it stays in that device's memory, an OrtValue of this session that
        the next run can take without a host round trip."""
        device = _check_device(device_type, device_id, "bind_output '%s'" % name)
        if buffer_ptr is None:
            self._bind_out(name, device)  # None: host memory
            return
        if device is not None:
            raise NotImplemented("bind_output '%s' on %r: a device buffer is bound as an OrtValue "
                                 "(bind_ortvalue_output), not by pointer" % (name, device_type))
        if element_type is None or shape is None:
            raise InvalidArgument("bind_output '%s': a buffer_ptr needs its element_type and shape" % name)
        dtype, code = _dtype_of(element_type)
        arr = _array_at(buffer_ptr, dtype, _shape_of(shape), "bind_output '%s'" % name)
        self._bind_out(name, OrtValue(arr, code if code == 16 else None))

    def bind_ortvalue_output(self, name, ortvalue):
        """The run writes output `name` into ortvalue's memory."""
        v = _as_ortvalue(ortvalue, "bind_ortvalue_output: ortvalue")
        if not v.is_tensor():
            raise InvalidArgument("bind_ortvalue_output '%s': only a tensor can be written into" % name)
        self._bind_out(name, v)

    def _bind_out(self, name, value):
        if not isinstance(name, str):
            raise TypeError("an output name must be a str, not %s" % type(name).__name__)
        self._outputs.pop(name, None)  # a rebinding moves it to the end, as ORT's
        self._outputs[name] = value

    def synchronize_outputs(self):
        """Nothing to wait for: outputs are complete when the run returns (a
        device output's read back waits for its copy)."""

    def get_outputs(self):
        """The outputs of the last run, as OrtValues in bind order: the bound
        OrtValues themselves (written in place), new ones for outputs bound
        by device (on that device: device_name() says which)."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        """The outputs of the last run as numpy arrays (copies)."""
        out = []
        for v in self._results:
            if v._device is not None:
                out.append(v.numpy())  # read back: a new array
            elif isinstance(v._value, _np.ndarray):
                out.append(v._value.copy())
            elif isinstance(v._value, list):
                out.append([a.copy() for a in v._value])
            else:
                out.append(None)
        return out

    def clear_binding_outputs(self):
        self._outputs.clear()
        self._results = []

    # -- The run (InferenceSession.run_with_iobinding) --

    def _run(self, sess, run_options):
        if not self._outputs:
            raise InvalidArgument("run_with_iobinding: at least one output must be bound")
        names = list(self._outputs)
        bound, devices = [], []
        for v in self._outputs.values():
            if isinstance(v, OrtValue):  # written into: on its device, of this session
                bound.append(v._on_device(sess._sess) if v._device is not None else v._value)
                devices.append(None)
            else:  # None (host) or a device: the run makes it
                bound.append(None)
                devices.append(v)
        feed = {n: v._on_device(sess._sess) if v._device is not None else v._value
                for n, v in self._inputs.items()}
        values = sess._run_into(names, feed, run_options, bound,
                                devices if any(d is not None for d in devices) else None)
        self._results = [
            v if isinstance(v, OrtValue)
            else OrtValue(values[k]) if isinstance(values[k], _DeviceTensor)
            else sess._ortvalue(names[k], values[k])
            for k, v in enumerate(self._outputs.values())
        ]
