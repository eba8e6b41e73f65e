"""A threadpoolctl controller for tensorbits' CPU thread pool, registered when threadpoolctl is
installed: ``threadpool_limits(1)`` and ``threadpool_info()`` then cover tensorbits as they cover
BLAS and OpenMP (``user_api="tensorbits"``)."""

import ctypes

from threadpoolctl import LibController, register  # type: ignore[import-untyped, unused-ignore]


class TensorbitsController(LibController):
    user_api = "tensorbits"
    internal_api = "tensorbits"
    # The extension module, found among the loaded libraries by its exported symbols.
    filename_prefixes = ("_native",)
    check_symbols = ("tensorbits_get_num_threads", "tensorbits_set_num_threads")

    def get_num_threads(self):
        return self.dynlib.tensorbits_get_num_threads()

    def set_num_threads(self, num_threads):
        self.dynlib.tensorbits_set_num_threads(ctypes.c_int(num_threads))

    def set_additional_attributes(self):
        # threadpool_info() lists it, as it lists OpenBLAS's architecture.
        from . import cpu_instruction_set

        self.architecture = cpu_instruction_set()

    def get_version(self):
        from . import __version__

        return __version__


register(TensorbitsController)
